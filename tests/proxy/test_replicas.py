"""Three proxy replicas behind HAProxy on one PostgreSQL store, one of them SIGKILLed mid-run.

The same conversations run twice, each on a fresh schema: through a single replica, then
through HAProxy (``deploy/haproxy.cfg``, round robin, no stickiness, 127.0.0.1 only) in front of
three, where one replica is killed while streams are open. Then:

- every client got exactly its own bytes; a stream the kill cut short ended in a clean error
  (only the start of its own bytes, then a closed connection, or a 502/503) and the client sent
  the same request again;
- every request reached the upstream rewritten to the very bytes the single replica sent for it
  (retries included): the cut is a function of the body, whichever replica made it;
- every conversation counts each of its requests exactly once, with its checkpoint as anchor and
  one handoff: nothing acknowledged was lost (each answer waited for its count), and a request
  sent again, by the client after a cut stream or by HAProxy after a replica died with it
  (``retry-on``), added nothing (deploy/README.md, "What the counts promise");
- the archive holds exactly what the single replica's archive holds, each block once, though
  every replica archived each checkpoint when it first met it.

Without haproxy (``apt-get install haproxy``) the test skips, saying so; under
``IPSE_REQUIRE_CLIENTS`` (CI) it fails instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipse.store import open_conversations
from tests.support import replicas as rp
from tests.support.anthropic_upstream import anthropic_upstream

CONVERSATIONS = 40  # streams at once (bench/replicas.py runs 200)
TURNS = 4  # requests per conversation; from turn CHECKPOINT_TURN on, handed off


def _haproxy() -> None:
    if rp.haproxy_binary() is not None:
        return
    if os.environ.get("IPSE_REQUIRE_CLIENTS", "") not in ("", "0"):
        pytest.fail("haproxy is missing (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip("haproxy is not installed (apt-get install haproxy)")


def test_replicas_behind_haproxy_survive_a_kill(pg_url: str, tmp_path: Path) -> None:
    _haproxy()
    base = os.environ["IPSE_TEST_DATABASE_URL"]
    total = CONVERSATIONS * TURNS
    with anthropic_upstream(answer=rp.answer) as upstream, rp.fresh_schema(base) as single_store:
        single_folder = tmp_path / "single"
        single_folder.mkdir()
        with rp.replicas(1, upstream.url, single_store, single_folder) as (only,):
            single = rp.drive(only.url, CONVERSATIONS, TURNS, retries=0, timeout=240)
        baseline = rp.received(upstream)
        single_archive = rp.archived(single_store)
        upstream.received.clear()

        folder = tmp_path / "replicas"
        folder.mkdir()
        with (
            rp.replicas(rp.REPLICAS, upstream.url, pg_url, folder) as running,
            rp.load_balancer(running, folder) as url,
            rp.kill_when(
                # a third of the run done, and streams open on the victim (on a loaded machine
                # its share may all have ended between two polls)
                lambda: len(upstream.received) >= total // 3 and running[1].inflight() > 0,
                running[1],
            ) as killed,
        ):
            outcome = rp.drive(url, CONVERSATIONS, TURNS, retries=3, timeout=240)
            survivors = [r.process.poll() for r in running]
        spread = rp.received(upstream)

    # the single replica: every stream exact, each request sent once
    assert single.exact == total and not single.wrong and not single.failed
    assert all(len(raws) == 1 for raws in baseline.values()) and len(baseline) == total
    # the kill happened while streams were open, and cut some of them
    assert len(killed) == 1 and survivors[1] == -9 and survivors[0] is None
    assert outcome.cut >= 1, "the kill cut no stream: it came too late to test anything"
    # every client got exactly its own bytes; cut streams only the start of them, then retried
    assert outcome.wrong == [] and outcome.failed == [] and outcome.cut_prefixes_own
    assert outcome.exact == total
    # every rewrite identical to the single replica's, on whichever replica it was made
    assert set(spread) == set(baseline)
    differing = [m for m, raws in spread.items() if any(r != baseline[m][0] for r in raws)]
    assert differing == []
    handed_off = [
        rp.marker(c, t)
        for c in range(CONVERSATIONS)
        for t in range(rp.CHECKPOINT_TURN, TURNS)
        if baseline[rp.marker(c, t)][0] != rp.body(c, t)
    ]
    assert len(handed_off) == CONVERSATIONS * (TURNS - rp.CHECKPOINT_TURN)
    # each request counted once: none acknowledged lost, none sent again counted twice
    store = open_conversations(pg_url)
    try:
        states = {c: store.get(f"session:{rp.session(c)}") for c in range(CONVERSATIONS)}
    finally:
        store.close()
    for c, state in states.items():
        assert state is not None
        assert (state.requests, state.handoffs) == (TURNS, 1), (c, state, outcome.attempts[c])
        assert state.anchor == rp.checkpoint_id(c)
    # the archive: what the single replica archived, each block once
    items, blobs, distinct = rp.archived(pg_url)
    assert items == single_archive[0] and len(items) == CONVERSATIONS
    assert blobs == distinct == single_archive[1]
