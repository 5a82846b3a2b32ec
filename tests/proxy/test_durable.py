"""What a proxy acknowledged is in the store before the client has it.

A replica can be killed at any moment (behind a load balancer, the next request of the
conversation goes to another one). So the blocks a handoff removed are in the archive before the
rewritten request leaves, and the request is counted in its conversation before the answer's
last event (or, for an answer that is not a stream, its first byte) goes back; only the record
and the log line wait for the bookkeeping thread. An archive that cannot be written leaves the
request as the client sent it.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from ipse.archive import open_archive
from ipse.store import open_conversations
from tests.proxy.conftest import ProxyFactory
from tests.proxy.test_shared_store import HISTORY
from tests.support.anthropic_upstream import anthropic_upstream

HEADERS = {
    "x-api-key": "k",
    "anthropic-version": "2023-06-01",
    "x-claude-code-session-id": "durable",
}
BODY: dict[str, Any] = {"model": "m", "max_tokens": 5, "messages": HISTORY, "stream": True}


def test_an_answered_request_is_stored_while_the_bookkeeping_is_stalled(
    proxy_factory: ProxyFactory, pg_url: str
) -> None:
    gate = threading.Event()
    with (
        anthropic_upstream(["done"]) as upstream,
        proxy_factory(upstream.url, store=pg_url) as proxy,
    ):
        # the bookkeeping thread is busy elsewhere
        proxy.state.bookkeeping.submit(lambda: gate.wait(30))
        try:
            with httpx.Client(timeout=30) as client:
                response = client.post(f"{proxy.url}/v1/messages", json=BODY, headers=HEADERS)
            assert response.status_code == 200 and b"message_stop" in response.content
            # the answer is complete; a replica killed now has already stored what it answered
            conversations = open_conversations(pg_url)
            archive = open_archive(pg_url)
            try:
                state = conversations.get("session:durable")
                items = archive.items("session:durable")
            finally:
                conversations.close()
                archive.close()
            assert proxy.state.pending >= 1  # the record and the log line are still waiting
        finally:
            gate.set()
        proxy.settle()
    assert state is not None and state.requests == 1 and state.handoffs == 1
    assert state.anchor == "toolu_cp"
    assert sorted(i.id for i in items) == ["toolu_a"]


def test_a_failing_archive_sends_the_clients_bytes(
    proxy_factory: ProxyFactory, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        anthropic_upstream(["done"]) as upstream,
        proxy_factory(upstream.url, store=pg_url) as proxy,
    ):
        working = proxy.state.store.archive

        def broken(puts: Any) -> None:
            raise RuntimeError("the archive is down")

        monkeypatch.setattr(proxy.state.store, "archive", broken)
        sent: list[bytes] = []
        with httpx.Client(timeout=30) as client:
            first = client.post(f"{proxy.url}/v1/messages", json=BODY, headers=HEADERS)
            sent.append(first.request.content)
            monkeypatch.setattr(proxy.state.store, "archive", working)
            second = client.post(f"{proxy.url}/v1/messages", json=BODY, headers=HEADERS)
        proxy.settle()
    assert first.status_code == second.status_code == 200
    raws = [r["raw"] for r in upstream.received]
    assert raws[0] == sent[0]  # untouched: nothing left the request that the archive lacks
    assert len(raws[1]) < len(raws[0])  # handed off, the cache forgotten so it archived again
    archive = open_archive(pg_url)
    try:
        assert [i.id for i in archive.items("session:durable")] == ["toolu_a"]
    finally:
        archive.close()


def test_a_hung_store_delays_answers_but_never_stops_them(
    proxy_factory: ProxyFactory, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    with (
        anthropic_upstream(["done"]) as upstream,
        proxy_factory(upstream.url, store=pg_url) as proxy,
    ):
        store = proxy.state.store
        store.wait = 0.5
        count, archive = store.count, store.archive

        def hung_count(*args: Any, **kwargs: Any) -> Any:
            release.wait(30)
            return count(*args, **kwargs)

        def hung_archive(puts: Any) -> None:
            release.wait(30)
            archive(puts)

        monkeypatch.setattr(store, "count", hung_count)
        monkeypatch.setattr(store, "archive", hung_archive)
        try:
            with httpx.Client(timeout=20) as client:
                response = client.post(f"{proxy.url}/v1/messages", json=BODY, headers=HEADERS)
                sent = response.request.content
            # answered while the store still hangs: whole, and with the client's own bytes,
            # since the archive never confirmed what the handoff would have removed
            assert response.status_code == 200 and b"message_stop" in response.content
            assert upstream.received[0]["raw"] == sent
        finally:
            release.set()
        proxy.settle()
    conversations = open_conversations(pg_url)
    try:
        state = conversations.get("session:durable")
    finally:
        conversations.close()
    assert state is not None and state.requests == 1 and state.handoffs == 0


def test_every_handoff_is_archived_in_the_default_sqlite_store(
    proxy_factory: ProxyFactory,
) -> None:
    # the SQLite archive is opened by one thread and may only be used by it: concurrent
    # conversations must not find it on another thread (which would skip their handoffs)
    from tests.support import replicas as rp

    conversations, turns = 8, 3
    with (
        anthropic_upstream(answer=rp.answer) as upstream,
        proxy_factory(upstream.url) as proxy,
    ):
        assert proxy.store.startswith("sqlite:")
        outcome = rp.drive(proxy.url, conversations, turns, retries=0, timeout=120)
        proxy.settle()
        sent = rp.received(upstream)
    assert outcome.exact == conversations * turns
    assert "not rewritten" not in proxy.log.getvalue()
    handed_off = [
        (c, t) for c in range(conversations) for t in range(turns)
        if sent[rp.marker(c, t)] != [rp.body(c, t)]
    ]  # fmt: skip
    assert len(handed_off) == conversations * (turns - rp.CHECKPOINT_TURN)
    archive = open_archive(proxy.store)
    try:
        for c in range(conversations):
            assert len(archive.items(f"session:{rp.session(c)}")) >= 1
    finally:
        archive.close()
