"""Group commit: concurrent writes of one process share transactions, each caller gets its own
outcome, and on PostgreSQL every turn is still stored once, on top of the one before."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

import pytest

from ipse.errors import StoreError, WriterConflict
from ipse.store._group import GroupCommit, Request
from ipse.twin import TwinState, apply_turn, open_store


def _callers(group: GroupCommit, values: Sequence[int]) -> dict[int, object]:
    out: dict[int, object] = {}

    def call(value: int) -> None:
        try:
            out[value] = group.submit(value)
        except StoreError as exc:
            out[value] = exc

    threads = [threading.Thread(target=call, args=(v,)) for v in values]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    return out


def _until(condition: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if condition():
            return
        threading.Event().wait(0.001)
    raise AssertionError("timed out")


def test_waiting_callers_share_a_batch_and_each_gets_its_own_outcome() -> None:
    release = threading.Event()
    batches: list[list[int]] = []

    def run(batch: Sequence[Request]) -> None:
        batches.append([r.params for r in batch])
        if len(batches) == 1:  # the first batch holds until everyone else is waiting
            release.wait(10)
        for request in batch:
            if request.params % 5 == 0:
                request.error = StoreError(f"no {request.params}")
            else:
                request.result = request.params * 10

    group = GroupCommit(run, leaders=1)
    first = threading.Thread(target=group.submit, args=(1,))
    first.start()
    _until(lambda: bool(batches))

    def open_when_all_wait() -> None:
        _until(lambda: len(group._queue) == 9)
        release.set()

    opener = threading.Thread(target=open_when_all_wait)
    opener.start()
    out = _callers(group, range(2, 11))
    first.join(10)
    opener.join(10)
    assert {v: r for v, r in out.items() if v % 5} == {v: v * 10 for v in range(2, 11) if v % 5}
    assert [str(out[5]), str(out[10])] == ["no 5", "no 10"]
    assert batches[0] == [1]
    assert sorted(itertools.chain.from_iterable(batches[1:])) == list(range(2, 11))
    assert batches[1] == list(range(2, 11)) or len(batches) < 10  # they shared a batch
    assert group.largest > 1


def test_a_batch_that_fails_as_a_whole_reaches_every_caller_of_it() -> None:
    broken = True

    def run(batch: Sequence[Request]) -> None:
        if broken:
            raise StoreError("the database went away")
        for request in batch:
            request.result = request.params

    group = GroupCommit(run, leaders=2)
    out = _callers(group, range(12))
    assert len(out) == 12 and all(isinstance(v, StoreError) for v in out.values())
    broken = False
    assert _callers(group, range(5)) == {n: n for n in range(5)}  # nobody left stuck


def test_leader_slots_are_all_given_back_after_bursts() -> None:
    """Many leaders and waiting callers at once: after each burst no slot stays taken (a slot
    handed to a request already leading would be lost, and the group would stall)."""

    def run(batch: Sequence[Request]) -> None:
        threading.Event().wait(0.0005)
        for request in batch:
            request.result = request.params

    group = GroupCommit(run, leaders=3)
    for burst in range(5):
        values = range(burst * 100, burst * 100 + 40)
        assert _callers(group, values) == {v: v for v in values}
        assert group._active == 0 and group._queue == []


def test_a_caller_alone_leads_at_once() -> None:
    def run(batch: Sequence[Request]) -> None:
        for request in batch:
            request.result = request.params

    group = GroupCommit(run)
    assert [group.submit(n) for n in range(5)] == list(range(5))
    assert group.batches == 5 and group.largest == 1


@pytest.mark.parametrize("durable_url", ["postgres"], indirect=True)
def test_threads_beyond_the_pool_share_commits_and_lose_nothing(durable_url: str) -> None:
    """32 threads on a pool of 2: turns of many twins and of one shared twin, all stored."""
    url = durable_url + ("&" if "?" in durable_url else "?") + "pool_size=2"
    twins, turns = 8, 6
    with open_store(url) as store:
        for t in range(twins):
            store.write_after("init", TwinState.new(f"g{t}"), 0)
        gate = threading.Barrier(32)
        errors: list[BaseException] = []

        def work(n: int) -> None:
            gate.wait()
            twin = f"g{n % twins}" if n % 4 else "shared"
            try:
                for i in range(turns):
                    record = {"op": "make_commitment", "text": f"{n}/{i}"}
                    apply_turn(store, twin, [record], holder=f"h{n}")
            except (StoreError, WriterConflict) as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors
        group = store.backend._group  # type: ignore[attr-defined]
        assert group.largest > 1  # callers beyond the pool shared transactions
        for twin in [*(f"g{t}" for t in range(twins)), "shared"]:
            history = store.history(twin)
            writers = [n for n in range(32) if (f"g{n % twins}" if n % 4 else "shared") == twin]
            first = 1 if twin != "shared" else 0
            assert [s.version for s in history] == list(range(1, len(writers) * turns + first + 1))
            for before, after in itertools.pairwise(history):
                assert after.state.commitments[:-1] == before.state.commitments
            assert sorted(history[-1].state.commitments) == sorted(
                f"{n}/{i}" for n in writers for i in range(turns)
            )


@pytest.mark.parametrize("durable_url", ["postgres"], indirect=True)
def test_a_batch_the_server_refuses_is_retried_one_write_each(durable_url: str) -> None:
    """One twin's lease row is locked by a frozen transaction: its write runs out of time
    (`WriterConflict`) and the other writes of the batch are still stored."""
    import psycopg

    from ipse.store import open_backend
    from ipse.store._postgres import PostgresBackend

    backend = open_backend(durable_url)
    assert isinstance(backend, PostgresBackend)
    for twin in ("frozen", "free"):
        backend.append_after(twin, "w", after=0, body={"n": 0}, state_hash="h0", schema=3)

    def request(twin: str) -> Request:
        params = {"t": twin, "h": "w", "after": 1, "hash": "h1", "schema": 3}
        return Request((1.0, {**params, "body": '{"n": 1}', "notes": "[]"}))

    batch = [request("frozen"), request("free")]
    with psycopg.connect(durable_url) as frozen:
        frozen.execute("SELECT * FROM twin_leases WHERE twin_id = 'frozen' FOR UPDATE")
        backend._append_batch(batch)
    assert isinstance(batch[0].error, WriterConflict)
    assert batch[1].error is None and batch[1].result is not None
    assert [r.version for r in backend.history("free")] == [1, 2]
    assert [r.version for r in backend.history("frozen")] == [1]
    backend.close()


@pytest.mark.parametrize("durable_url", ["postgres"], indirect=True)
def test_reads_beyond_the_pool_share_a_query_and_each_gets_its_own_twin(durable_url: str) -> None:
    from ipse.store import open_backend

    url = durable_url + ("&" if "?" in durable_url else "?") + "pool_size=2"
    backend = open_backend(url)
    for t in range(8):
        for v in range(t + 1):
            body = {"twin": t, "v": v + 1}
            backend.append_after(f"r{t}", "w", after=v, body=body, state_hash="h", schema=3)
    gate = threading.Barrier(32)
    wrong: list[str] = []

    def read(n: int) -> None:
        gate.wait()
        t = n % 8
        for _ in range(20):
            newest = backend.latest(f"r{t}")
            if newest is None or newest.body != {"twin": t, "v": t + 1}:
                wrong.append(f"r{t}: {newest}")
            if backend.latest(f"r{t}", newer_than=t + 1) is not None:
                wrong.append(f"r{t}: a row above the newest")
            older = backend.latest(f"r{t}", newer_than=t)
            if older is None or older.version != t + 1:
                wrong.append(f"r{t}: {older}")

    threads = [threading.Thread(target=read, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert wrong == []
    assert backend._reads.largest > 1  # type: ignore[attr-defined]
    backend.close()
