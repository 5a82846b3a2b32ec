"""The conformance suite every snapshot backend passes, importable by any backend's tests.

Each check is a plain function taking a fresh, empty `SnapshotBackend`; it raises
`AssertionError` when the backend breaks the contract (the in-memory backend is the reference).
The suite needs no test framework: with pytest, parametrize over `CHECKS`::

    from ipse.store.testing import CHECKS

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
    def test_conformance(check, backend):
        check(backend)
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ipse.errors import InputError, IpseError, StaleWriter, WriterConflict
from ipse.store._base import Lease, SnapshotBackend, SnapshotRecord
from ipse.store._conversations import ConversationStore

BODY: dict[str, Any] = {
    "twin_id": "t1",
    "schema": 3,
    "text": "héllo ✓",
    "nested": {"a": [1, 2, None]},
}

Check = Callable[[SnapshotBackend], None]


@contextlib.contextmanager
def raises(kind: type[IpseError], match: str = "") -> Iterator[None]:
    """Assert that the block raises ``kind`` with a message matching ``match``."""
    try:
        yield
    except kind as exc:
        if not re.search(match, str(exc)):
            raise AssertionError(f"{kind.__name__} {str(exc)!r} does not match {match!r}") from exc
    else:
        raise AssertionError(f"{kind.__name__} was not raised")


def write(
    backend: SnapshotBackend, lease: Lease, n: int = 0, notes: Sequence[dict[str, Any]] = ()
) -> SnapshotRecord:
    """Append snapshot ``n`` (a copy of `BODY` with ``"n": n``) under ``lease``."""
    return backend.append(
        lease, body={**BODY, "n": n}, state_hash=f"sha256:{n}", schema=3, notes=notes
    )


def check_empty_store(backend: SnapshotBackend) -> None:
    assert backend.latest("t1") is None
    assert backend.history("t1") == []
    assert backend.twins() == []


def check_first_lease_and_write(backend: SnapshotBackend) -> None:
    lease = backend.acquire("t1", "alice", 30)
    assert (lease.twin_id, lease.holder, lease.token) == ("t1", "alice", 1)
    record = write(backend, lease, 1, notes=[{"event": "fact_left", "reason": "expired"}])
    assert record.version == 1
    assert record.writer == "alice" and record.token == 1
    latest = backend.latest("t1")
    assert latest is not None
    assert latest.body == {**BODY, "n": 1}
    assert latest.state_hash == "sha256:1" and latest.schema == 3
    assert latest.notes == ({"event": "fact_left", "reason": "expired"},)
    assert backend.twins() == ["t1"]


def check_versions_are_contiguous_and_history_ordered(backend: SnapshotBackend) -> None:
    lease = backend.acquire("t1", "alice", 30)
    for n in range(5):
        write(backend, lease, n)
    history = backend.history("t1")
    assert [r.version for r in history] == [1, 2, 3, 4, 5]
    assert [r.body["n"] for r in history] == [0, 1, 2, 3, 4]
    latest = backend.latest("t1")
    assert latest is not None and latest.version == 5


def check_twins_are_isolated(backend: SnapshotBackend) -> None:
    a = backend.acquire("a", "w", 30)
    b = backend.acquire("b", "w", 30)
    write(backend, a, 1)
    write(backend, b, 2)
    write(backend, b, 3)
    assert [r.version for r in backend.history("a")] == [1]
    assert [r.version for r in backend.history("b")] == [1, 2]
    assert backend.twins() == ["a", "b"]


def check_second_holder_conflicts_while_lease_holds(backend: SnapshotBackend) -> None:
    backend.acquire("t1", "alice", 30)
    with raises(WriterConflict, match="alice"):
        backend.acquire("t1", "bob", 30)


def check_token_grows_with_every_lease(backend: SnapshotBackend) -> None:
    tokens = []
    for holder in ["a", "b", "c", "a"]:
        lease = backend.acquire("t1", holder, 30)
        tokens.append(lease.token)
        backend.release(lease)
    assert tokens == [1, 2, 3, 4]


def check_taken_over_writer_is_fenced(backend: SnapshotBackend) -> None:
    old = backend.acquire("t1", "alice", 30)
    write(backend, old, 1)
    backend.release(old)
    new = backend.acquire("t1", "bob", 30)
    assert new.token > old.token
    with raises(StaleWriter):
        write(backend, old, 2)
    with raises(StaleWriter):
        backend.renew(old, 30)
    write(backend, new, 3)
    assert [(r.writer, r.body["n"]) for r in backend.history("t1")] == [("alice", 1), ("bob", 3)]


def check_release_of_stale_lease_does_not_free_the_new_one(backend: SnapshotBackend) -> None:
    old = backend.acquire("t1", "alice", 30)
    backend.release(old)
    backend.acquire("t1", "bob", 30)
    backend.release(old)
    with raises(WriterConflict):
        backend.acquire("t1", "carol", 30)


def check_same_holder_reacquires_with_new_token(backend: SnapshotBackend) -> None:
    first = backend.acquire("t1", "alice", 30)
    second = backend.acquire("t1", "alice", 30)
    assert second.token == first.token + 1
    with raises(StaleWriter):
        write(backend, first, 1)
    write(backend, second, 2)


def check_expired_lease_is_taken_over_and_cannot_write(backend: SnapshotBackend) -> None:
    old = backend.acquire("t1", "alice", 0.05)
    time.sleep(0.3)
    with raises(StaleWriter):
        write(backend, old, 1)
    new = backend.acquire("t1", "bob", 30)
    assert new.token == old.token + 1
    with raises(StaleWriter):
        write(backend, old, 1)
    assert backend.history("t1") == []


def check_renew_keeps_token(backend: SnapshotBackend) -> None:
    lease = backend.acquire("t1", "alice", 30)
    renewed = backend.renew(lease, 60)
    assert renewed.token == lease.token
    assert renewed.expires_at >= lease.expires_at
    write(backend, renewed, 1)
    write(backend, lease, 2)  # same token, still the current lease


def check_returned_records_are_copies(backend: SnapshotBackend) -> None:
    lease = backend.acquire("t1", "alice", 30)
    write(backend, lease, 1)
    latest = backend.latest("t1")
    assert latest is not None
    latest.body["n"] = 999
    again = backend.latest("t1")
    assert again is not None and again.body["n"] == 1


def check_bad_ttl_is_refused(backend: SnapshotBackend) -> None:
    for ttl in (0, -1, "5", True):
        with raises(InputError, match="ttl"):
            backend.acquire("t1", "alice", ttl)  # type: ignore[arg-type]


def check_bad_twin_id_is_refused(backend: SnapshotBackend) -> None:
    for twin_id in ("", "a\nb"):
        with raises(InputError, match="twin_id"):
            backend.acquire(twin_id, "alice", 30)


def check_latest_version(backend: SnapshotBackend) -> None:
    assert backend.latest_version("t1") is None
    lease = backend.acquire("t1", "alice", 30)
    write(backend, lease, 1)
    write(backend, lease, 2)
    assert backend.latest_version("t1") == 2
    assert backend.latest_version("other") is None


def write_after(
    backend: SnapshotBackend, holder: str, after: int, n: int = 0, twin_id: str = "t1"
) -> SnapshotRecord | None:
    """`append_after` of snapshot ``n`` (a copy of `BODY` with ``"n": n``)."""
    return backend.append_after(
        twin_id, holder, after=after, body={**BODY, "n": n}, state_hash=f"sha256:{n}", schema=3
    )


def check_append_after_writes_only_the_next_version(backend: SnapshotBackend) -> None:
    first = write_after(backend, "alice", 0, 1)
    assert first is not None and (first.version, first.writer) == (1, "alice")
    second = write_after(backend, "bob", 1, 2)
    assert second is not None and second.version == 2 and second.token > first.token
    assert second.body == {**BODY, "n": 2} and second.state_hash == "sha256:2"
    assert write_after(backend, "carol", 1, 3) is None  # the twin moved past version 1
    assert write_after(backend, "carol", 0, 3) is None
    assert write_after(backend, "carol", 5, 3) is None  # not a version that exists
    assert [(r.version, r.body["n"]) for r in backend.history("t1")] == [(1, 1), (2, 2)]
    latest = backend.latest("t1")
    assert latest is not None and latest.body == {**BODY, "n": 2} and latest.writer == "bob"
    assert write_after(backend, "carol", 0, 1, twin_id="t2") is not None
    assert backend.twins() == ["t1", "t2"]


def check_append_after_waits_for_no_lease_of_its_own(backend: SnapshotBackend) -> None:
    write_after(backend, "alice", 0, 1)
    lease = backend.acquire("t1", "bob", 30)  # free at once: append_after gave it up
    assert lease.token == 2
    with raises(WriterConflict, match="bob"):
        write_after(backend, "alice", 1, 2)
    assert backend.latest_version("t1") == 1
    write(backend, lease, 2)
    assert [r.writer for r in backend.history("t1")] == ["alice", "bob"]


def check_append_after_fences_older_leases(backend: SnapshotBackend) -> None:
    mine = backend.acquire("t1", "alice", 30)
    record = write_after(backend, "alice", 0, 1)  # the same holder may, with a new token
    assert record is not None and record.token > mine.token
    with raises(StaleWriter):
        write(backend, mine, 2)
    old = backend.acquire("t1", "bob", 30)
    backend.release(old)
    assert write_after(backend, "carol", 1, 2) is not None
    with raises(StaleWriter):
        write(backend, old, 3)
    assert [r.writer for r in backend.history("t1")] == ["alice", "carol"]


def check_append_after_refuses_bad_input(backend: SnapshotBackend) -> None:
    with raises(InputError, match="twin_id"):
        write_after(backend, "alice", 0, twin_id="")
    with raises(InputError, match="ttl"):
        backend.append_after("t1", "alice", after=0, body={}, state_hash="h", schema=3, ttl=0)
    assert backend.history("t1") == []


def check_latest_newer_than(backend: SnapshotBackend) -> None:
    lease = backend.acquire("t1", "alice", 30)
    write(backend, lease, 1)
    write(backend, lease, 2)
    assert backend.latest("t1", newer_than=2) is None
    assert backend.latest("t1", newer_than=5) is None
    newer = backend.latest("t1", newer_than=1)
    assert newer is not None and (newer.version, newer.body["n"]) == (2, 2)
    assert backend.latest("other", newer_than=0) is None


CHECKS: tuple[Check, ...] = (
    check_empty_store,
    check_first_lease_and_write,
    check_versions_are_contiguous_and_history_ordered,
    check_twins_are_isolated,
    check_second_holder_conflicts_while_lease_holds,
    check_token_grows_with_every_lease,
    check_taken_over_writer_is_fenced,
    check_release_of_stale_lease_does_not_free_the_new_one,
    check_same_holder_reacquires_with_new_token,
    check_expired_lease_is_taken_over_and_cannot_write,
    check_renew_keeps_token,
    check_returned_records_are_copies,
    check_bad_ttl_is_refused,
    check_bad_twin_id_is_refused,
    check_latest_version,
    check_append_after_writes_only_the_next_version,
    check_append_after_waits_for_no_lease_of_its_own,
    check_append_after_fences_older_leases,
    check_append_after_refuses_bad_input,
    check_latest_newer_than,
)
"""Every check, in order; each takes a fresh, empty backend."""


def run_all(open_backend: Callable[[], SnapshotBackend]) -> None:
    """Run every check, each on a fresh backend from ``open_backend`` (closed afterwards)."""
    for check in CHECKS:
        backend = open_backend()
        try:
            check(backend)
        finally:
            backend.close()


# ------------------------------------------------------------------ conversation stores

ConversationCheck = Callable[["ConversationStore"], None]


def check_conversation_unknown_is_none(store: ConversationStore) -> None:
    assert store.get("c1") is None
    assert store.conversations() == []


def check_conversation_counts_requests(store: ConversationStore) -> None:
    first = store.record("c1")
    assert (first.requests, first.handoffs, first.anchor) == (1, 0, None)
    second = store.record("c1", anchor="toolu_1", handoff=True, removed_calls=3, removed_bytes=90)
    assert (second.requests, second.handoffs, second.anchor) == (2, 1, "toolu_1")
    assert (second.removed_calls, second.removed_bytes) == (3, 90)
    assert second.first_seen == first.first_seen and second.last_seen >= first.last_seen
    assert store.get("c1") == second


def check_conversation_counts_each_cut_once(store: ConversationStore) -> None:
    """A handoff is the first request cut at an anchor; the later requests at that cut (each
    rewritten the same way) are counted as requests, not as more handoffs."""
    first = store.record("c1", anchor="toolu_1", handoff=True, removed_calls=3, request="r1")
    assert first.made_cut("r1") and first.handoffs == 1
    later = store.record("c1", anchor="toolu_1", handoff=True, removed_calls=3, request="r2")
    assert not later.made_cut("r2") and later.made_cut("r1")
    assert (later.requests, later.handoffs, later.removed_calls) == (2, 1, 3)
    second = store.record("c1", anchor="toolu_9", handoff=True, removed_calls=2, request="r3")
    assert second.made_cut("r3")
    assert (second.requests, second.handoffs, second.removed_calls) == (3, 2, 5)


def check_conversation_counts_a_request_sent_again_once(store: ConversationStore) -> None:
    """The request counted last, sent again unchanged (a retry), adds nothing; sent again after
    another request, it is a request of its own."""
    store.record("c1", request="r1")
    again = store.record("c1", anchor="toolu_1", handoff=True, removed_calls=1, request="r1")
    assert (again.requests, again.handoffs, again.anchor) == (1, 0, None)
    store.record("c1", request="r2")
    assert store.record("c1", request="r1").requests == 3
    assert store.record("c1").requests == 4  # no digest: always a request of its own
    assert store.record("c1").requests == 5


def check_conversation_anchor_kept_until_replaced(store: ConversationStore) -> None:
    store.record("c1", anchor="a1")
    assert store.record("c1").anchor == "a1"
    assert store.record("c1", anchor="a2").anchor == "a2"


def check_conversations_are_isolated_and_listed(store: ConversationStore) -> None:
    store.record("c1", anchor="a")
    store.record("c2 ✓")
    states = {s.key: s for s in store.conversations()}
    assert set(states) == {"c1", "c2 ✓"} and states["c2 ✓"].anchor is None


def check_conversation_bad_input_is_refused(store: ConversationStore) -> None:
    with raises(InputError, "conversation key"):
        store.record("")
    with raises(InputError, "conversation key"):
        store.record("a\nb")
    with raises(InputError, "removed_calls"):
        store.record("c1", removed_calls=-1)
    assert store.get("c1") is None


CONVERSATION_CHECKS: tuple[ConversationCheck, ...] = (
    check_conversation_unknown_is_none,
    check_conversation_counts_requests,
    check_conversation_counts_each_cut_once,
    check_conversation_counts_a_request_sent_again_once,
    check_conversation_anchor_kept_until_replaced,
    check_conversations_are_isolated_and_listed,
    check_conversation_bad_input_is_refused,
)
"""Every conversation-store check; each takes a fresh, empty store."""


# A backend's suite: the checks and the runner (`raises`, `write` and `BODY` are the checks' own
# helpers, which `ipse.archive.testing` borrows).
__all__ = ["CHECKS", "CONVERSATION_CHECKS", "Check", "ConversationCheck", "run_all"]
