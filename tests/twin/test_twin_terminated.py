"""A twin write whose PostgreSQL connection the server terminates (``pg_terminate_backend``),
on a real server, at the two moments that matter: after the commit, before the reply (the
write is stored, yet its caller hears only that the connection died), and before the
statement ran (nothing is stored). Either way the turn is stored exactly once: the caller
reads back what it wrote before trying again, and gets its turn, not an error.

A relay in front of the server (`tests.support.pg_cut`) picks the moment; the server does the
terminating.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from tests.support.pg_cut import CutRelay, cut_relay

from ipse.errors import ConnectionLost, InputError, StoreError
from ipse.store._connections import connection_lost
from ipse.twin import apply_turn, open_store
from ipse.twin._store import Snapshot, TwinStore
from ipse.twin._turn import Turn, init_twin

# the single write's prepared statement, sent by name; the text of a batch's statements
SINGLE = b"ipse_append_after"
BATCH = b"INSERT INTO twin_snapshots"


@pytest.fixture
def relay(pg_url: str) -> Iterator[CutRelay]:
    with cut_relay(pg_url) as relay:
        yield relay


def _history(url: str, twin_id: str) -> list[Snapshot]:
    with open_store(url) as store:
        return store.history(twin_id)


def _ready(store: TwinStore, twin_id: str, loops: int = 1) -> None:
    """A twin with loops ``l0``, ``l1``, ... open (and the statements prepared on the
    connection). Closing a loop is a turn that cannot be applied twice: the second time the
    loop is not open (`InputError`)."""
    init_twin(store, twin_id)
    apply_turn(store, twin_id, [{"op": "open_loop", "text": f"l{n}"} for n in range(loops)])


def _close(store: TwinStore, twin_id: str, loop: str) -> Turn:
    return apply_turn(store, twin_id, [{"op": "close_loop", "loop": loop}])


def test_a_write_cut_after_its_commit_is_stored_though_its_caller_hears_an_error(
    relay: CutRelay, pg_url: str
) -> None:
    # what a caller of the backend meets: the connection is lost, and the row is there
    with open_store(relay.url) as store:
        _ready(store, "t1")
        relay.arm(SINGLE, "after-commit")
        with pytest.raises(StoreError) as raised:
            store.backend.append_after("t1", "me", after=2, body={"x": 1}, state_hash="h", schema=3)
    assert isinstance(raised.value, ConnectionLost) and relay.cuts == 1
    assert [(s.version, s.record.writer) for s in _history(pg_url, "t1")][-1] == (3, "me")


@pytest.mark.parametrize("moment", ["after-commit", "before"])
def test_a_turn_whose_connection_is_terminated_is_stored_exactly_once(
    relay: CutRelay, pg_url: str, moment: str
) -> None:
    with open_store(relay.url) as store:
        _ready(store, "t1")
        relay.arm(SINGLE, moment)
        turn = _close(store, "t1", "l0")
    assert relay.cuts == 1
    history = _history(pg_url, "t1")
    assert [s.version for s in history] == [1, 2, 3]
    assert [len(s.state.open_loops) for s in history] == [0, 1, 0]
    assert turn.written is not None and turn.version == 3
    assert history[-1].record.body == turn.written.record.body
    with pytest.raises(InputError, match="loop"), open_store(pg_url) as store:
        _close(store, "t1", "l0")  # what a second apply meets


def test_a_first_snapshot_cut_after_its_commit_is_the_twin_not_a_conflict(
    relay: CutRelay, pg_url: str
) -> None:
    with open_store(relay.url) as store:
        _ready(store, "warm")  # the statement prepared on the connection
        relay.arm(SINGLE, "after-commit")
        first = init_twin(store, "t2")
    assert relay.cuts == 1 and first.version == 1
    assert [s.version for s in _history(pg_url, "t2")] == [1]


def _together(store: TwinStore, twins: list[str], loop: str) -> list[Exception]:
    """Each twin's loop closed by its own thread, all at once; the errors they met."""
    start, errors = threading.Barrier(len(twins)), []

    def close(twin_id: str) -> None:
        start.wait()
        try:
            _close(store, twin_id, loop)
        except Exception as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=close, args=(t,)) for t in twins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


def test_turns_sharing_a_cut_transaction_are_each_stored_once(relay: CutRelay, pg_url: str) -> None:
    # one connection: turns that arrive together share a transaction (group commit); when it
    # is cut after its commit, every turn of it is stored, and each caller gets its own
    twins, rounds = [f"g{n}" for n in range(6)], 20
    with open_store(relay.url + "&pool_size=1") as store:
        for twin_id in twins:
            _ready(store, twin_id, loops=rounds)
        for done in range(1, rounds + 1):  # until turns met in one transaction, cut
            relay.arm(BATCH, "after-commit")
            assert _together(store, twins, f"l{done - 1}") == []
            if relay.cuts:
                break
        else:
            pytest.skip(f"no two turns met in one transaction in {rounds} rounds")
    for twin_id in twins:
        history = _history(pg_url, twin_id)
        assert [s.version for s in history] == list(range(1, 3 + done))
        assert len(history[-1].state.open_loops) == rounds - done


def test_which_errors_say_the_connection_was_lost() -> None:
    import psycopg

    for lost in (
        psycopg.OperationalError("server closed the connection unexpectedly"),
        psycopg.errors.AdminShutdown(),  # 57P01: pg_terminate_backend, maybe after the commit
        psycopg.errors.CrashShutdown(),
        psycopg.errors.ConnectionFailure(),
    ):
        assert connection_lost(lost), lost
    for refused in (
        psycopg.errors.LockNotAvailable(),  # the statement was refused: nothing committed
        psycopg.errors.DeadlockDetected(),
        psycopg.errors.QueryCanceled(),
        psycopg.ProgrammingError("bad use of the API"),
    ):
        assert not connection_lost(refused), refused
