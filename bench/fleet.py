"""Benchmark and check: a fleet of twins written by worker processes sharing one PostgreSQL.

``--workers`` real processes (default 8) share ``--twins`` twins (default 10,000) in one
database. Each worker owns a slice of the twins and makes ``--writes`` passes over it (the
later passes send every 4th write to a random twin of the whole fleet, so workers contend for
leases). One write is an apply (``apply_turn``): one transition (a new commitment) applied to
the twin's latest snapshot and stored on top of it under the twin's lease, which the write
takes and gives up in its own transaction (retried while another holder's lease lasts; a
write that lost a race is applied again to the newer snapshot). After each apply the worker
appends the acknowledged write (twin, version, identity hash) to its log and fsyncs it before
counting it, then rehydrates a random twin of the fleet (read the latest snapshot, render the
request prefix).

While they run, workers are killed with SIGKILL at random moments while they write (only a
worker that has acknowledged a write since it started), ``--kills`` times, about every
``--kill-every`` seconds, and restarted; a restarted worker resumes after the last write its
log acknowledges. A killed worker's open transaction is rolled back by the server, its lease
with it (a lease taken on its own would be free again after ``--ttl`` seconds). Afterwards the
store is checked:

* forks: every twin's versions run 1..n with no gap or duplicate, and every snapshot is its
  predecessor plus exactly one commitment (a writer that wrote over a stale read shows here);
* lost writes: every acknowledged write in every log is in the store, with its hash;
* lease waits: the longest time a worker spent retrying while another holder's lease lasted;
  a worker gives up after ``--max-wait`` seconds and says so (waits for the lease row's lock
  inside a write are bounded by the TTL and show in the apply latency).

It prints throughput (acknowledged applies per second of the whole run, restarts included)
and p50/p99 latency of apply and rehydrate (rehydrate samples from workers that were not
killed). Bounded: ``--seconds`` stops everything. Every process it starts is stopped.

    python bench/fleet.py [--twins 10000] [--workers 8] [--writes 2] [--kills 8] [--json]
        [--pg-url postgresql://postgres@127.0.0.1:5432/test | --url URL_OF_A_READY_SCHEMA]

``--pg-url`` (or IPSE_BENCH_DATABASE_URL, IPSE_TEST_DATABASE_URL) runs in a fresh schema that
is dropped afterwards; ``--url`` uses the database as given and leaves it (for tests that check
the store themselves).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.sql import scratch_schema

T0 = datetime(2025, 1, 1, tzinfo=UTC)
ROLE = "You are a support twin. Be brief, warm and exact."


def twin_name(i: int) -> str:
    return f"twin-{i:05d}"


def plan(slot: int, workers: int, twins: int, writes: int) -> list[str]:
    """The twins a worker slot writes, in order (the same list on every restart)."""
    mine = [twin_name(i) for i in range(slot, twins, workers)]
    rng = random.Random(slot)
    ops = list(mine)
    for _ in range(1, writes):
        ops += [twin_name(rng.randrange(twins)) if j % 4 == 3 else t for j, t in enumerate(mine)]
    return ops


def acked_lines(path: Path) -> list[list[str]]:
    """The complete lines of an acknowledgement log (a kill may leave half a line)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]  # the part after the last newline is incomplete
    return [line.split("\t") for line in lines if line]


# --- the worker process --------------------------------------------------------------------


def worker(args: argparse.Namespace) -> int:
    from ipse.errors import WriterConflict
    from ipse.twin import TwinConfig, apply_turn, open_store, rehydrate

    logs = Path(args.logs)
    ack_path = logs / f"acks-{args.worker}.log"
    ops = plan(args.worker, args.workers, args.twins, args.writes)
    done = len(acked_lines(ack_path))
    holder = f"w{args.worker}.{os.getpid()}"
    config = TwinConfig(role=ROLE)
    rng = random.Random(os.getpid())
    reads: list[float] = []
    waits: list[float] = []
    gave_up = 0
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open_store(args.url) as store:
        for j in range(done, len(ops)):
            twin = ops[j]
            start = time.perf_counter()
            step = {"op": "make_commitment", "text": f"{holder} op {j}"}
            written = None
            attempt = start
            while written is None:
                attempt = time.perf_counter()
                try:
                    turn = apply_turn(store, twin, [step], holder=holder, ttl=args.ttl)
                    written = turn.written
                    assert written is not None  # a new commitment always changes the twin
                except WriterConflict:
                    if time.perf_counter() - start > args.max_wait:
                        gave_up += 1
                        break
                    time.sleep(rng.uniform(0.005, 0.03))
            if written is None:
                continue
            took = time.perf_counter() - start
            waited = attempt - start  # retrying while another holder's lease lasted
            waits.append(waited)
            fields = (twin, written.version, written.state_hash, f"{took:.6f}", f"{waited:.6f}")
            line = "\t".join(map(str, fields)) + "\n"
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)  # acknowledged only once it is on disk
            other = twin_name(rng.randrange(args.twins))
            t = time.perf_counter()
            rehydrate(store, other, config, at=T0).to_bytes("anthropic")
            reads.append(time.perf_counter() - t)
    os.close(fd)
    stats = {"reads": reads, "waits": waits, "gave_up": gave_up}
    (logs / f"stats-{args.worker}-{os.getpid()}.json").write_text(json.dumps(stats))
    return 0


# --- the run: start, kill, restart, check --------------------------------------------------


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    with scratch_schema(base_url, "ipse_fleet_") as (url, _):
        yield url


def start(args: argparse.Namespace, slot: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, __file__, "--worker", str(slot), "--url", args.url]
    cmd += ["--logs", str(args.logs), "--twins", str(args.twins), "--workers", str(args.workers)]
    cmd += ["--writes", str(args.writes), "--ttl", str(args.ttl)]
    cmd += ["--max-wait", str(args.max_wait)]
    return subprocess.Popen(cmd)


def _log_size(args: argparse.Namespace, slot: int) -> int:
    path = Path(args.logs) / f"acks-{slot}.log"
    return path.stat().st_size if path.exists() else 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from ipse.twin import open_store

    with open_store(args.url):
        pass  # migrate once before the workers open it
    rng = random.Random(args.seed)
    began = time.perf_counter()
    deadline = began + args.seconds
    procs = {slot: start(args, slot) for slot in range(args.workers)}
    started_at = {slot: _log_size(args, slot) for slot in procs}
    kills = restarts = failed = 0
    next_kill = time.perf_counter() + rng.uniform(0, 2 * args.kill_every)
    timed_out = False
    try:
        while True:
            running = [s for s, p in procs.items() if p.poll() is None]
            for slot, p in list(procs.items()):
                if p.returncode not in (None, 0, -signal.SIGKILL):
                    failed += 1
                    procs[slot] = start(args, slot)  # a crash is restarted like a kill
                    restarts += 1
            if not running:
                break
            if time.perf_counter() > deadline:
                timed_out = True
                break
            writing = [s for s in running if _log_size(args, s) > started_at[s]]
            if kills < args.kills and writing and time.perf_counter() >= next_kill:
                slot = rng.choice(writing)  # one that has written since it (re)started
                procs[slot].send_signal(signal.SIGKILL)
                procs[slot].wait()
                kills += 1
                started_at[slot] = _log_size(args, slot)
                procs[slot] = start(args, slot)
                restarts += 1
                next_kill = time.perf_counter() + rng.uniform(0, 2 * args.kill_every)
            time.sleep(0.02)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
    wall = time.perf_counter() - began
    result = check(args)
    result.update(
        wall_s=round(wall, 2),
        kills=kills,
        restarts=restarts,
        crashed=failed,
        timed_out=timed_out,
        applies_per_s=round(result["acked"] / wall, 1),
    )
    return result


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def check(args: argparse.Namespace) -> dict[str, Any]:
    """Forks, lost acknowledged writes and lease waits, from the store and the logs."""
    import psycopg

    conninfo = args.url
    if "pool_size=" in conninfo:  # ipse's own parameter, unknown to libpq
        from ipse.store._connections import pool_settings

        conninfo, _ = pool_settings(args.url)
    chains: dict[str, list[tuple[int, str, list[str]]]] = {}
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur:
        cur.execute("SELECT twin_id, version, state_hash, body FROM twin_snapshots ORDER BY 1, 2")
        for twin, version, state_hash, body in cur:
            chains.setdefault(twin, []).append(
                (int(version), str(state_hash), json.loads(body)["commitments"])
            )
    forks = []
    for twin, chain in chains.items():
        if [v for v, _, _ in chain] != list(range(1, len(chain) + 1)):
            forks.append(f"{twin}: versions {[v for v, _, _ in chain]}")
            continue
        for (_, _, before), (v, _, after) in itertools.pairwise(chain):
            if after[:-1] != before or len(after) != len(before) + 1:
                forks.append(f"{twin} v{v} does not build on v{v - 1}")
    stored = {(t, v): h for t, chain in chains.items() for v, h, _ in chain}
    logs = Path(args.logs)
    acked = lost = 0
    applies: list[float] = []
    waits: list[float] = []
    missing: list[str] = []
    for path in sorted(logs.glob("acks-*.log")):
        for twin, version, state_hash, took, wait in acked_lines(path):
            acked += 1
            applies.append(float(took))
            waits.append(float(wait))
            if stored.get((twin, int(version))) != state_hash:
                lost += 1
                missing.append(f"{twin} v{version}")
    reads: list[float] = []
    gave_up = 0
    for path in logs.glob("stats-*.json"):
        stats = json.loads(path.read_text())
        reads += stats["reads"]
        gave_up += stats["gave_up"]
    ms = 1000.0
    return {
        "twins": len(chains),
        "snapshots": len(stored),
        "acked": acked,
        "forks": len(forks),
        "fork_examples": forks[:5],
        "lost": lost,
        "lost_examples": missing[:5],
        "max_lease_wait_ms": round(max(waits, default=0.0) * ms, 1),
        "lease_gave_up": gave_up,
        "apply_p50_ms": round(pct(applies, 0.5) * ms, 2),
        "apply_p99_ms": round(pct(applies, 0.99) * ms, 2),
        "rehydrate_p50_ms": round(pct(reads, 0.5) * ms, 2),
        "rehydrate_p99_ms": round(pct(reads, 0.99) * ms, 2),
        "rehydrate_samples": len(reads),
        "rehydrate_mean_ms": round(statistics.fmean(reads) * ms, 2) if reads else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--twins", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=2, help="passes over each worker's twins")
    parser.add_argument("--kills", type=int, default=8, help="SIGKILLs of workers, at most")
    parser.add_argument("--kill-every", type=float, default=2.0, help="mean seconds between")
    parser.add_argument("--ttl", type=float, default=2.0, help="lease time to live, seconds")
    parser.add_argument("--max-wait", type=float, default=30.0, help="lease wait before giving up")
    parser.add_argument("--seconds", type=float, default=600.0, help="stop everything after")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--logs", help="folder for the workers' logs (default: a temporary one)")
    parser.add_argument("--url", help="a ready database URL, used as is and left in place")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("IPSE_BENCH_DATABASE_URL")
        or os.environ.get("IPSE_TEST_DATABASE_URL"),
        help="PostgreSQL server: the run gets a fresh schema, dropped afterwards",
    )
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args)
    with tempfile.TemporaryDirectory() as tmp:
        if args.logs is None:
            args.logs = tmp
        Path(args.logs).mkdir(parents=True, exist_ok=True)
        if args.url:
            result = run(args)
        elif args.pg_url:
            with pg_schema(args.pg_url) as url:
                args.url = url
                result = run(args)
        else:
            print("give --pg-url or IPSE_TEST_DATABASE_URL", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"== fleet: {args.twins} twins, {args.workers} workers, {args.writes} passes")
        for key, value in result.items():
            print(f"{key:>20}: {value}")
    ok = not result["forks"] and not result["lost"] and not result["lease_gave_up"]
    return 0 if ok and not result["timed_out"] else 1


if __name__ == "__main__":
    sys.exit(main())
