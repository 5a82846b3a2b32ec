"""Benchmark: ipse twin turns and reads against LangGraph checkpointers, in one run.

For SQLite and PostgreSQL it times, per operation, the equivalent work on both sides:

* apply: one turn, a read-modify-write of one twin. ipse: ``apply_turn`` (read the newest
  snapshot unless the store holds it, apply the records, store the result on top of the version
  read, under the twin's lease). LangGraph: ``get_tuple`` of the thread, the same records
  applied to the state it holds, ``put`` of the result with the read checkpoint as parent (what
  a graph step does). Both apply the same records to states of the same size. Also with the
  store's reuse of snapshots off (``apply, fresh store``: a read, then the write).
* write: a blind write of a given state. ipse: ``maybe_snapshot`` under a lease held for the
  whole run; LangGraph: ``put``.
* read: ipse ``rehydrate`` (the newest snapshot, rendered as a request prefix; also with reuse
  off: decoded every time) against LangGraph's ``get_tuple`` of the thread.

LangGraph's checkpoints are written as its own runs write them (format version 4, so a read
is one query). Rounds alternate ipse and LangGraph so load spikes hit both; it prints the
median and 95th percentile of every operation's latency over all rounds and the ratio of the
medians (LangGraph / ipse; above 1 means ipse is faster). On PostgreSQL it also times the floor
under any durable write (a one-row ``INSERT`` committed on its own: one round trip, one WAL
flush) and, with ``--threads`` (default 32) threads on both sides and ``--pool`` (default 8)
connections per side, the throughput of applies and reads (``read_fresh``: a store with reuse
off): ipse threads share one store (one pool); each LangGraph thread has a ``PostgresSaver``
of its own on one shared ``psycopg_pool`` pool (one saver serialises its calls with a lock).
ipse's calls beyond the pool's connections share transactions and queries (group commit);
LangGraph's wait for a connection. Durability settings are the
server's, the same for both (``synchronous_commit`` is printed). Nothing is asserted.

    pip install -e '.[bench]'
    python bench/twin.py [--n 200] [--rounds 5] [--threads 32] [--pool 8] [--pg-url URL]

The PostgreSQL part runs when ``--pg-url`` (or IPSE_BENCH_DATABASE_URL, IPSE_TEST_DATABASE_URL)
is given, in a fresh schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.sql import scratch_schema

from ipse.store._open import sqlite_url
from ipse.twin import TwinConfig, TwinState, apply_turn, open_store, rehydrate
from ipse.twin._apply import apply_transitions
from ipse.twin._schema import dump_state, load_snapshot
from ipse.twin._store import maybe_snapshot

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CONFIG = TwinConfig(role="You are Ada, Acme's support twin. Be brief, warm and exact.")
LANGGRAPH_FORMAT = 4  # the checkpoint format LangGraph's own runs write (langgraph.pregel)
Samples = dict[str, list[float]]


def base_state(twin_id: str = "ada") -> TwinState:
    """A realistic twin state: a dozen facts, a few commitments, three open loops."""
    records: list[dict[str, Any]] = [{"op": "set_counterparty", "account": "Dana Reyes (4471)"}]
    records += [{"op": "establish_fact", "text": f"fact number {i} about Dana"} for i in range(12)]
    records += [{"op": "make_commitment", "text": t} for t in ("be brief", "no upselling")]
    records += [{"op": "open_loop", "text": f"loop {i}"} for i in range(3)]
    return apply_transitions(TwinState.new(twin_id, at=T0), records, at=T0).state


def turn_records(i: int) -> list[dict[str, Any]]:
    """Turn ``i``: open a loop and close the previous one (the state keeps its size)."""
    previous = f"turn {i - 1}" if i else "loop 0"
    return [{"op": "open_loop", "text": f"turn {i}"}, {"op": "close_loop", "loop": previous}]


def variants(state: TwinState, n: int) -> list[TwinState]:
    """``n`` states of the same size that differ in identity (the last commitment)."""
    return [replace(state, commitments=(*state.commitments[:-1], f"turn {i}")) for i in range(n)]


def prefix(store: Any, twin: str) -> bytes:
    """A rehydrate: the newest snapshot rendered as the request prefix."""
    return rehydrate(store, twin, CONFIG, at=T0).to_bytes("anthropic")


def samples(fn: Callable[[int], object], n: int) -> list[float]:
    """Seconds of each of ``n`` calls of ``fn(i)``."""
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out


def bench_ipse(url: str, n: int, twin: str) -> Samples:
    states = [replace(s, twin_id=twin) for s in variants(base_state(), n + 1)]
    out: Samples = {}
    with open_store(url) as store:
        lease = store.acquire(twin, "bench", ttl=3600)
        last = maybe_snapshot(store, lease, states[0], None)
        hashes = [last]

        def write(i: int) -> None:
            hashes.append(maybe_snapshot(store, lease, states[i + 1], hashes[-1]))

        out["write"] = samples(write, n)
        store.release(lease)
        unchanged = states[-1]
        out["unchanged"] = samples(lambda i: maybe_snapshot(store, lease, unchanged, hashes[-1]), n)
        out["read"] = samples(lambda i: prefix(store, twin), n)
        turner = f"{twin}-turns"
        store.write_after("bench", replace(base_state(), twin_id=turner), 0)
        out["apply"] = samples(lambda i: apply_turn(store, turner, turn_records(i)), n)
        assert len(store.history(twin)) == n + 1 and len(store.history(turner)) == n + 1
    with open_store(url, cache=False) as cold:
        out["read_fresh"] = samples(lambda i: prefix(cold, twin), n)
        out["apply_fresh"] = samples(lambda i: apply_turn(cold, turner, turn_records(n + i)), n)
    return out


def langgraph_put(saver: Any, config: dict[str, Any], state: dict[str, Any], step: int) -> Any:
    """Put ``state`` as the thread's next checkpoint, as a graph step does; its config."""
    from langgraph.checkpoint.base import empty_checkpoint

    checkpoint = empty_checkpoint()
    checkpoint["v"] = LANGGRAPH_FORMAT
    checkpoint["channel_values"] = {"twin": state}
    checkpoint["channel_versions"] = {"twin": step}
    return saver.put(config, checkpoint, {"source": "update", "step": step}, {"twin": step})


def langgraph_turn(saver: Any, thread: dict[str, Any], i: int) -> None:
    """A LangGraph step doing ipse's turn: read the thread, apply the records, put."""
    got = saver.get_tuple(thread)
    state = load_snapshot(got.checkpoint["channel_values"]["twin"])
    new = apply_transitions(state, turn_records(i)).state
    step = int(got.checkpoint["channel_versions"]["twin"]) + 1
    langgraph_put(saver, got.config, dump_state(new), step)


def bench_langgraph(saver: Any, n: int, twin: str) -> Samples:
    states = [dump_state(s) for s in variants(base_state(), n)]
    config: dict[str, Any] = {"configurable": {"thread_id": twin, "checkpoint_ns": ""}}
    thread = {"configurable": {"thread_id": twin, "checkpoint_ns": ""}}

    def put(i: int) -> None:
        nonlocal config
        config = langgraph_put(saver, config, states[i], i + 1)

    out: Samples = {"write": samples(put, n), "read": samples(lambda i: saver.get_tuple(thread), n)}
    got = saver.get_tuple(thread)
    assert got is not None and got.checkpoint["channel_values"]["twin"] == states[-1]
    turner = {"configurable": {"thread_id": f"{twin}-turns", "checkpoint_ns": ""}}
    langgraph_put(saver, turner, dump_state(base_state()), 1)
    out["apply"] = samples(lambda i: langgraph_turn(saver, turner, i), n)
    return out


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    with scratch_schema(base_url, "ipse_bench_") as (url, _):
        yield url


def bench_floor(url: str, n: int) -> list[float]:
    """Seconds of durable one-row INSERTs in autocommit (one round trip, one WAL flush)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id SERIAL PRIMARY KEY, v TEXT)")
        return samples(lambda i: conn.execute("INSERT INTO bench_floor (v) VALUES (%s)", ("x",)), n)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.3f}"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


ROWS = (
    ("apply", "apply", "apply (read-modify-write)"),
    ("apply_fresh", "apply", "apply, fresh store"),
    ("write", "write", "write (blind)"),
    ("read", "read", "read"),
    ("read_fresh", "read", "read, fresh store"),
)


def report(name: str, ours: Samples, theirs: Samples | None) -> None:
    print(f"\n== {name}: latency in ms, median and p95 over all rounds")
    print(f"{'operation':28} {'ipse p50':>8} {'p95':>7} | {'LangGraph':>9} {'p95':>7} | ratio")
    for key, their_key, label in ROWS:
        mine = ours[key]
        line = f"{label:28} {ms(statistics.median(mine)):>8} {ms(p95(mine))}"
        if theirs is not None:
            other = theirs[their_key]
            ratio = statistics.median(other) / statistics.median(mine)
            line += f" | {ms(statistics.median(other)):>9} {ms(p95(other))} | {ratio:5.2f}x"
        print(line)
    print(f"{'unchanged turn (hash only)':28} {ms(statistics.median(ours['unchanged'])):>8}")
    if "floor" in ours:
        floor = statistics.median(ours["floor"])
        print(f"{'floor: one-row INSERT commit':28} {ms(floor):>8} {ms(p95(ours['floor']))}")
    if theirs is None:
        print("LangGraph baseline not installed (pip install -e '.[bench]')")


def alternate(url: str, saver: Any, args: argparse.Namespace) -> tuple[Samples, Samples | None]:
    """Rounds of ipse then LangGraph, alternating, so load spikes hit both; samples pooled."""
    ours: Samples = {}
    theirs: Samples = {}
    for k in range(args.rounds):
        round_ours = bench_ipse(url, args.n, f"ada-{k}")
        if url.startswith("postgresql"):
            round_ours["floor"] = bench_floor(url, args.n)
        for key, values in round_ours.items():
            ours.setdefault(key, []).extend(values)
        if saver is not None:
            for key, values in bench_langgraph(saver, args.n, f"ada-{k}").items():
                theirs.setdefault(key, []).extend(values)
    return ours, (theirs if theirs else None)


def in_threads(threads: int, work: Callable[[int], list[float]]) -> tuple[float, list[float]]:
    """Run ``work(t)`` in ``threads`` threads at once; wall seconds and every latency."""
    gate = threading.Barrier(threads + 1)
    results: list[list[float]] = [[] for _ in range(threads)]

    def run(t: int) -> None:
        gate.wait()
        results[t] = work(t)

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    return time.perf_counter() - start, [x for r in results for x in r]


def throughput_ipse(url: str, args: argparse.Namespace, k: int) -> dict[str, Any]:
    twins = [f"par-{k}-{t}" for t in range(args.threads)]
    sep = "&" if "?" in url else "?"
    with open_store(f"{url}{sep}pool_size={args.pool}") as store:
        for twin in twins:
            store.write_after("bench", replace(base_state(), twin_id=twin), 0)
        apply = in_threads(
            args.threads,
            lambda t: samples(lambda i: apply_turn(store, twins[t], turn_records(i)), args.n),
        )
        read = in_threads(
            args.threads,
            lambda t: samples(lambda i: prefix(store, twins[t]), args.n),
        )
    with open_store(f"{url}{sep}pool_size={args.pool}", cache=False) as cold:
        fresh = in_threads(
            args.threads,
            lambda t: samples(lambda i: prefix(cold, twins[t]), args.n),
        )
    return {"apply": apply, "read": read, "read_fresh": fresh}


def throughput_langgraph(url: str, args: argparse.Namespace, k: int) -> dict[str, Any]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    size = args.pool
    with ConnectionPool(url, min_size=size, max_size=size, kwargs=kwargs) as pool:
        savers = [PostgresSaver(pool) for _ in range(args.threads)]  # type: ignore[arg-type]
        threads = [
            {"configurable": {"thread_id": f"par-{k}-{t}", "checkpoint_ns": ""}}
            for t in range(args.threads)
        ]
        for t, thread in enumerate(threads):
            state = dump_state(replace(base_state(), twin_id=f"par-{k}-{t}"))
            langgraph_put(savers[t], thread, state, 1)
        apply = in_threads(
            args.threads,
            lambda t: samples(lambda i: langgraph_turn(savers[t], threads[t], i), args.n),
        )
        read = in_threads(
            args.threads, lambda t: samples(lambda i: savers[t].get_tuple(threads[t]), args.n)
        )
    return {"apply": apply, "read": read}


def report_throughput(args: argparse.Namespace, runs: list[tuple[dict[str, Any], ...]]) -> None:
    each = f"{args.threads} threads and {args.pool} connections each side"
    print(f"\n== PostgreSQL, {each}, {args.n} ops per thread")
    print(f"{'operation':10} {'ipse ops/s':>10} {'p50':>7} {'p95':>7} | {'LangGraph':>9}", end="")
    print(f" {'p50':>7} {'p95':>7} | ratio (median of rounds)")
    for op, their_op in (("apply", "apply"), ("read", "read"), ("read_fresh", "read")):
        cells = []
        ratios = []
        for side, key in ((0, op), (1, their_op)):
            walls = [run[side][key][0] for run in runs]
            lat = [x for run in runs for x in run[side][key][1]]
            rate = args.threads * args.n / statistics.median(walls)
            cells.append(f"{rate:10.0f} {ms(statistics.median(lat))} {ms(p95(lat))}")
        for ours, theirs in runs:
            ratios.append(theirs[their_op][0] / ours[op][0])
        print(f"{op:10} {cells[0]} | {cells[1]:>9} | {statistics.median(ratios):5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="operations per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--threads", type=int, default=32, help="threads for throughput (0: off)")
    parser.add_argument("--pool", type=int, default=8, help="connections per side for throughput")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("IPSE_BENCH_DATABASE_URL")
        or os.environ.get("IPSE_TEST_DATABASE_URL"),
        help="PostgreSQL server for the PostgreSQL part",
    )
    args = parser.parse_args()
    bench_sqlite(args)
    if not args.pg_url:
        print("\n== PostgreSQL: skipped (give --pg-url or IPSE_TEST_DATABASE_URL)")
        return
    bench_postgres(args)


def bench_sqlite(args: argparse.Namespace) -> None:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        SqliteSaver = None
    with tempfile.TemporaryDirectory() as tmp:
        saver = None
        if SqliteSaver is not None:
            conn = sqlite3.connect(Path(tmp) / "langgraph.db", check_same_thread=False)
            saver = SqliteSaver(conn)
            saver.setup()
        ours, theirs = alternate(sqlite_url(Path(tmp) / "ipse.db"), saver, args)
        report(f"SQLite (n={args.n} x {args.rounds} rounds)", ours, theirs)


def bench_postgres(args: argparse.Namespace) -> None:
    import psycopg

    with psycopg.connect(args.pg_url) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    with pg_schema(args.pg_url) as url:
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:
            ours, theirs = alternate(url, None, args)
            PostgresSaver = None
        else:
            with PostgresSaver.from_conn_string(url) as pg_saver:
                pg_saver.setup()
                ours, theirs = alternate(url, pg_saver, args)
        title = f"PostgreSQL, synchronous_commit={row[0] if row else '?'}"
        report(f"{title} (n={args.n} x {args.rounds} rounds)", ours, theirs)
        if PostgresSaver is not None and args.threads > 0:
            runs = [
                (throughput_ipse(url, args, k), throughput_langgraph(url, args, k))
                for k in range(args.rounds)
            ]
            report_throughput(args, runs)


if __name__ == "__main__":
    main()
