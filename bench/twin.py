"""Benchmark: ipse twin snapshots against LangGraph checkpointers, in one run.

For SQLite and PostgreSQL it times, per operation: ``maybe_snapshot`` on an unchanged state
(hash only, nothing written), a changed write (``maybe_snapshot`` that writes), and a
``rehydrate`` (read the latest snapshot and render the request prefix; also with the store's
reuse of already decoded snapshots turned off, as a fresh reader would). As the baseline it
times the same write-then-read of an equivalent state through LangGraph's ``SqliteSaver`` and
``PostgresSaver`` (``put`` then ``get_tuple``), and prints ratios (LangGraph time / ipse time;
above 1 means ipse is faster). Nothing is asserted.

On PostgreSQL it also times the floor under any durable write: a one-row ``INSERT`` committed
on its own (one round trip and one WAL flush, which ipse's write and LangGraph's ``put`` both
pay), so the write ratio can be read against what the server's disk allows.

    pip install -e '.[bench]'
    python bench/twin.py [--n 200] [--rounds 5] [--pg-url postgresql://postgres@127.0.0.1:5432/test]

The PostgreSQL part runs when ``--pg-url`` (or IPSE_BENCH_DATABASE_URL, IPSE_TEST_DATABASE_URL)
is given, in a fresh schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ipse.store import sqlite_url
from ipse.twin import (
    TwinConfig,
    TwinState,
    apply_transitions,
    dump_state,
    maybe_snapshot,
    open_store,
    rehydrate,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CONFIG = TwinConfig(role="You are Ada, Acme's support twin. Be brief, warm and exact.")


def base_state() -> TwinState:
    """A realistic twin state: a dozen facts, a few commitments, three open loops."""
    records: list[dict[str, Any]] = [{"op": "set_counterparty", "account": "Dana Reyes (4471)"}]
    records += [{"op": "establish_fact", "text": f"fact number {i} about Dana"} for i in range(12)]
    records += [{"op": "make_commitment", "text": t} for t in ("be brief", "no upselling")]
    records += [{"op": "open_loop", "text": f"loop {i}"} for i in range(3)]
    return apply_transitions(TwinState.new("ada", at=T0), records, at=T0).state


def variants(state: TwinState, n: int) -> list[TwinState]:
    """``n`` states of the same size that differ in identity (the last commitment)."""
    return [replace(state, commitments=(*state.commitments[:-1], f"turn {i}")) for i in range(n)]


def timed(fn: Callable[[int], object], n: int) -> float:
    """Mean seconds per call of ``fn(i)`` over ``n`` calls."""
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - start) / n


def bench_ipse(url: str, n: int, twin: str) -> dict[str, float]:
    states = [replace(s, twin_id=twin) for s in variants(base_state(), n + 1)]
    with open_store(url) as store:
        lease = store.acquire(twin, "bench", ttl=3600)
        last = maybe_snapshot(store, lease, states[0], None)
        unchanged = timed(lambda i: maybe_snapshot(store, lease, states[0], last), n)
        hashes = [last]

        def write(i: int) -> None:
            hashes.append(maybe_snapshot(store, lease, states[i + 1], hashes[-1]))

        changed = timed(write, n)
        read = timed(lambda i: rehydrate(store, twin, CONFIG, at=T0).to_bytes("anthropic"), n)
        assert len(store.history(twin)) == n + 1
    with open_store(url, cache=False) as cold:
        decode = timed(lambda i: rehydrate(cold, twin, CONFIG, at=T0).to_bytes("anthropic"), n)
    return {"unchanged": unchanged, "write": changed, "rehydrate": read, "decode": decode}


def bench_langgraph(saver: Any, n: int, twin: str) -> dict[str, float]:
    from langgraph.checkpoint.base import empty_checkpoint

    states = [dump_state(s) for s in variants(base_state(), n)]
    config: dict[str, Any] = {"configurable": {"thread_id": twin, "checkpoint_ns": ""}}

    def put(i: int) -> None:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"twin": states[i]}
        checkpoint["channel_versions"] = {"twin": i + 1}
        nonlocal config
        config = saver.put(config, checkpoint, {"source": "update", "step": i}, {"twin": i + 1})

    write = timed(put, n)
    read_config = {"configurable": {"thread_id": twin, "checkpoint_ns": ""}}
    read = timed(lambda i: saver.get_tuple(read_config), n)
    got = saver.get_tuple(read_config)
    assert got is not None and got.checkpoint["channel_values"]["twin"] == states[-1]
    return {"write": write, "read": read}


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    import psycopg

    schema = "ipse_bench_" + secrets.token_hex(4)
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base_url else "?"
    try:
        yield f"{base_url}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def bench_floor(url: str, n: int) -> float:
    """Mean seconds of a durable one-row INSERT in autocommit (one round trip, one WAL flush)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id SERIAL PRIMARY KEY, v TEXT)")
        return timed(lambda i: conn.execute("INSERT INTO bench_floor (v) VALUES (%s)", ("x",)), n)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} µs"


def report(name: str, ipse: dict[str, float], lg: dict[str, float] | None) -> None:
    print(f"\n== {name}")
    print(f"ipse maybe_snapshot, unchanged : {us(ipse['unchanged'])}")
    print(f"ipse maybe_snapshot, changed   : {us(ipse['write'])}")
    print(f"ipse rehydrate                 : {us(ipse['rehydrate'])}")
    print(f"ipse rehydrate, decoding       : {us(ipse['decode'])}  (no decoded-snapshot reuse)")
    if lg is None:
        print("LangGraph baseline not installed (pip install -e '.[bench]')")
        return
    print(f"LangGraph put                  : {us(lg['write'])}")
    print(f"LangGraph get_tuple            : {us(lg['read'])}")
    ours = ipse["write"] + ipse["rehydrate"]
    theirs = lg["write"] + lg["read"]
    print(f"ratio write      (LangGraph/ipse): {lg['write'] / ipse['write']:6.2f}x")
    print(f"ratio read       (LangGraph/ipse): {lg['read'] / ipse['rehydrate']:6.2f}x")
    print(f"ratio read, decoding (LangGraph/ipse): {lg['read'] / ipse['decode']:6.2f}x")
    print(f"ratio write+read (LangGraph/ipse): {theirs / ours:6.2f}x")
    print(f"ratio unchanged turn vs LangGraph put: {lg['write'] / ipse['unchanged']:6.0f}x")
    if "floor" in ipse:
        print(f"floor: one-row INSERT commit   : {us(ipse['floor'])}  (one WAL flush)")
        print(
            f"ratio write / floor (ipse, LangGraph): {ipse['write'] / ipse['floor']:5.2f}x, "
            f"{lg['write'] / ipse['floor']:5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="operations per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (median)")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("IPSE_BENCH_DATABASE_URL")
        or os.environ.get("IPSE_TEST_DATABASE_URL"),
        help="PostgreSQL server for the PostgreSQL part",
    )
    args = parser.parse_args()
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401

        have_sqlite_saver = True
    except ImportError:
        have_sqlite_saver = False

    with tempfile.TemporaryDirectory() as tmp:
        saver = None
        if have_sqlite_saver:
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(Path(tmp) / "langgraph.db", check_same_thread=False)
            saver = SqliteSaver(conn)
            saver.setup()
        ours, theirs = alternate(sqlite_url(Path(tmp) / "ipse.db"), saver, args)
        report(f"SQLite (n={args.n} x {args.rounds} rounds, medians)", ours, theirs)

    if not args.pg_url:
        print("\n== PostgreSQL: skipped (give --pg-url or IPSE_TEST_DATABASE_URL)")
        return
    with pg_schema(args.pg_url) as url:
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:
            ours, theirs = alternate(url, None, args)
        else:
            with PostgresSaver.from_conn_string(url) as pg_saver:
                pg_saver.setup()
                ours, theirs = alternate(url, pg_saver, args)
        report(f"PostgreSQL (n={args.n} x {args.rounds} rounds, medians)", ours, theirs)


def alternate(
    url: str, saver: Any, args: argparse.Namespace
) -> tuple[dict[str, float], dict[str, float] | None]:
    """Rounds of ipse then LangGraph, alternating, so load spikes hit both; medians."""
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for k in range(args.rounds):
        ours.append(bench_ipse(url, args.n, f"ada-{k}"))
        if url.startswith("postgresql"):
            ours[-1]["floor"] = bench_floor(url, args.n)
        if saver is not None:
            theirs.append(bench_langgraph(saver, args.n, f"ada-{k}"))
    return medians(ours), (medians(theirs) if theirs else None)


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


if __name__ == "__main__":
    main()
