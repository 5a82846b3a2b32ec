"""Reading and writing back the largest shared session, against plain orjson on the same bytes.

Baseline: ``orjson.loads`` of every line of the session plus ``orjson.dumps`` of every record.
Measured: ipse reading the session (record tree, threads, merged messages, linked tool results)
and writing its conversation back as an Anthropic request body with ``orjson.dumps``.
Both run in the same process, interleaved, best of N; the script prints the ratio.

    python bench/read.py [--repeat N] [SESSION.jsonl]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from ipse.transcript import load, write

DEFAULT = (
    Path(__file__).resolve().parents[1]
    / ".."
    / "shared"
    / "data"
    / "claude-code"
    / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
).resolve()


def baseline(path: Path) -> int:
    data = path.read_bytes()
    records = [orjson.loads(line) for line in data.split(b"\n") if line.strip()]
    return sum(len(orjson.dumps(r)) for r in records)


def measured(path: Path) -> int:
    source = load(path, "claude-code")
    assert source.thread is not None
    total = 0
    for segment in source.thread.segments:
        total += len(orjson.dumps(write(segment.conversation)))
    return total


def best_of(fn: Callable[[Path], int], path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(path)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    size = args.session.stat().st_size
    measured(args.session)  # warm up imports and caches
    base = best_of(baseline, args.session, args.repeat)
    ours = best_of(measured, args.session, args.repeat)
    print(f"session: {args.session.name} ({size / 1e6:.2f} MB)")
    print(f"orjson loads+dumps baseline: {base * 1000:8.1f} ms")
    print(f"ipse read + write back:      {ours * 1000:8.1f} ms")
    print(f"ratio: {ours / base:.2f}x (target: at most 3x)")


if __name__ == "__main__":
    main()
