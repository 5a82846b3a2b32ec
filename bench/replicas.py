"""Proxy replicas behind HAProxy on one PostgreSQL store, with a SIGKILL mid-run, against one
replica alone in the same run.

The conversations of ``tests/proxy/test_replicas.py`` at load: ``--streams`` clients at once
(default 200), each ``--turns`` streamed requests whose history grows, handed off from the
third turn on. First through a single ``ipse proxy`` (its own fresh schema), then through
HAProxy (``deploy/haproxy.cfg``, round robin, no stickiness) in front of three replicas on
another fresh schema, the second replica SIGKILLed once a third of the requests have reached
the upstream. The upstream is the scripted Anthropic upstream of the tests, answering each
request with bytes named after its conversation and turn.

Prints: streams, kills, streams cut by the kill (a clean error, sent again by the client),
clients that got exactly their own bytes, rewrites identical to the single replica's (every
copy the upstream got), conversations that counted each request exactly once (retries added
nothing) with one handoff, archived blocks
(and duplicates), and the wall time of the replicated run over the single one. Loopback only;
bounded in count (``--streams`` x ``--turns``, 3 retries) and time (``--timeout`` per run); every
process it starts is stopped at the end, and both schemas are dropped.

    python bench/replicas.py [--streams 200] [--turns 4] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import replicas as rp
from tests.support.anthropic_upstream import anthropic_upstream

from ipse.store import open_conversations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run, at most")
    args = parser.parse_args()
    base = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not base:
        raise SystemExit("set IPSE_TEST_DATABASE_URL to a PostgreSQL server (postgresql://...)")
    if rp.haproxy_binary() is None:
        raise SystemExit("haproxy is not installed (apt-get install haproxy)")
    streams, turns = args.streams, args.turns
    total = streams * turns
    with (
        tempfile.TemporaryDirectory(prefix="ipse-replicas-") as folder,
        anthropic_upstream(answer=rp.answer) as upstream,
        rp.fresh_schema(base) as single_store,
        rp.fresh_schema(base) as shared_store,
    ):
        one, many = Path(folder) / "single", Path(folder) / "replicas"
        one.mkdir()
        many.mkdir()
        with rp.replicas(1, upstream.url, single_store, one) as (only,):
            single = rp.drive(only.url, streams, turns, retries=0, timeout=args.timeout)
        baseline = rp.received(upstream)
        single_items, _, _ = rp.archived(single_store)
        upstream.received.clear()
        with (
            rp.replicas(rp.REPLICAS, upstream.url, shared_store, many) as running,
            rp.load_balancer(running, many) as url,
            rp.kill_when(
                lambda: len(upstream.received) >= total // 3 and running[1].inflight() > 0,
                running[1],
            ) as killed,
        ):
            spread_run = rp.drive(url, streams, turns, retries=3, timeout=args.timeout)
        spread = rp.received(upstream)
        items, blobs, distinct = rp.archived(shared_store)
        store = open_conversations(shared_store)
        try:
            counted = sum(
                1
                for c in range(streams)
                if (state := store.get(f"session:{rp.session(c)}")) is not None
                and state.requests == turns
                and state.handoffs == 1
                and state.anchor == rp.checkpoint_id(c)
            )
        finally:
            store.close()
    copies = sum(len(raws) for raws in spread.values())
    identical = sum(
        1 for m, raws in spread.items() for raw in raws if m in baseline and raw == baseline[m][0]
    )
    print(f"streams at once:           {streams} ({turns} requests each, {total} requests)")
    print(f"single replica:            {single.exact}/{total} exact, {single.wall:.2f} s")
    print(f"three replicas + haproxy:  {spread_run.exact}/{total} exact, {spread_run.wall:.2f} s")
    print(f"kills:                     {len(killed)} (SIGKILL of replica 2 mid-run)")
    print(f"streams cut, then retried: {spread_run.cut}")
    print(f"wrong bytes:               {len(spread_run.wrong)}")
    print(f"never answered:            {len(spread_run.failed)}")
    print(f"identical rewrites:        {identical}/{copies} requests the upstream got")
    print(f"counted exactly once:      {counted}/{streams} conversations")
    print(
        f"archived blocks:           {len(items)} (single replica {len(single_items)},"
        f" same set: {items == single_items}), blobs {blobs}, distinct {distinct}"
    )
    print(f"wall time, replicas / single: {spread_run.wall / single.wall:.2f}x")
    ok = (
        single.exact == total
        and spread_run.exact == total
        and not spread_run.wrong
        and identical == copies
        and counted == streams
        and items == single_items
        and blobs == distinct
    )
    if not ok:
        raise SystemExit("FAILED: see the lines above")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"(bench ran {time.monotonic() - started:.1f} s)")
