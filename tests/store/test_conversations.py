"""The per-conversation state a proxy keeps: conformance on every backend, migrations, races."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from ipse.store import ConversationStore, open_backend, open_conversations
from ipse.store.testing import CONVERSATION_CHECKS, ConversationCheck


@pytest.fixture
def conversations(store_url: str) -> Iterator[ConversationStore]:
    store = open_conversations(store_url)
    try:
        yield store
    finally:
        store.close()


@pytest.mark.parametrize(
    "check", CONVERSATION_CHECKS, ids=lambda check: check.__name__.removeprefix("check_")
)
def test_conformance(check: ConversationCheck, conversations: ConversationStore) -> None:
    check(conversations)


def test_state_survives_reopening(sqlite_url: str) -> None:
    store = open_conversations(sqlite_url)
    store.record("c1", anchor="a1", handoff=True, removed_calls=2, removed_bytes=10)
    store.close()
    again = open_conversations(sqlite_url)
    try:
        state = again.get("c1")
        assert state is not None and state.anchor == "a1" and state.requests == 1
    finally:
        again.close()


def test_migration_is_recorded_beside_the_twin_tables(sqlite_url: str) -> None:
    open_conversations(sqlite_url).close()
    backend = open_backend(sqlite_url)
    backend.close()
    import sqlite3

    from ipse.store._open import sqlite_path

    with sqlite3.connect(sqlite_path(sqlite_url)) as db:
        rows = db.execute(
            "SELECT step, name FROM ipse_migrations WHERE component = 'conversations'"
        ).fetchall()
    assert rows == [
        (1, "conversation anchors and counters"),
        (2, "the request counted last and the request of the newest cut"),
    ]


@pytest.mark.parametrize("durable_url", ["sqlite", "postgres"], indirect=True)
def test_concurrent_records_lose_no_count(durable_url: str) -> None:
    """Several writers (each with its own connection, like proxy processes) count every request
    and every cut; the same request sent to all of them at once counts once, and its cut too."""
    stores = [open_conversations(durable_url) for _ in range(4)]
    try:

        def work(n: int, store: ConversationStore) -> None:
            for i in range(25):
                store.record("shared", anchor=f"a{n}.{i}", handoff=True, removed_calls=1)
                store.record("retried", anchor="a", handoff=True, removed_calls=1, request="r")

        threads = [threading.Thread(target=work, args=(n, s)) for n, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        state = stores[0].get("shared")
        assert state is not None and state.requests == 100 and state.removed_calls == 100
        assert state.handoffs == 100
        retried = stores[0].get("retried")
        assert retried is not None and (retried.requests, retried.handoffs) == (1, 1)
        assert retried.made_cut("r") and retried.removed_calls == 1
    finally:
        for s in stores:
            s.close()
