"""Benchmark: prefix analysis of a large request log against plain orjson parsing of it.

Generates, into a temporary folder, a JSONL log of at least 500 Anthropic request bodies of at
least 300 KB each: the conversations of the shared Claude Code sessions, rebuilt per assistant
turn, behind the real system prompt and 229 tool definitions of the shared captured log, with
each turn's recorded usage and time. Then times, in the same run:

* baseline: read the file and ``orjson.loads`` every line;
* analysis: ``read_requests`` + ``analyze`` (the work ``ipse prefix LOG`` does), with the
  default token estimates (recorded usage present), and once more with o200k counts.

Prints the ratios (target: analysis at most 2x the parse). Run: ``python bench/prefix.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from ipse.prefix._report import analyze
from ipse.prefix._requests import read_requests

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
FRONT = SHARED / "anthropic-http" / "captured-2" / "01.json"


def generate(folder: Path, count: int, min_bytes: int) -> Path:
    """The log file: ``count`` requests, each at least ``min_bytes`` long."""
    front = orjson.loads(FRONT.read_bytes())["request"]["content"]
    sessions = sorted((SHARED / "claude-code").glob("*.jsonl"))
    path = folder / "log.jsonl"
    written = 0
    round_ = 0
    with path.open("wb") as out:
        while written < count:
            for session in sessions:
                try:
                    log = read_requests(session, "claude-code")
                except Exception:  # a session this reader refuses is simply not used
                    continue
                system = [dict(b) for b in front["system"]]
                system[-1] = {**system[-1], "text": system[-1]["text"] + f"\nrun {round_}"}
                for request in log.requests:
                    body = {
                        "model": front["model"],
                        "max_tokens": front["max_tokens"],
                        "tools": front["tools"],
                        "system": system,
                        "messages": request.body["messages"],
                        "cache_control": {"type": "ephemeral"},
                    }
                    line = dict(body)
                    if request.time is not None:
                        line["ts"] = (request.time + timedelta(days=round_)).isoformat()
                    if request.usage is not None:
                        line["usage"] = dict(request.usage)
                    data = orjson.dumps(line)
                    if len(data) < min_bytes:
                        continue
                    out.write(data + b"\n")
                    written += 1
                    if written >= count:
                        return path
            round_ += 1
    return path


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def parse(path: Path) -> None:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--min-kb", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = generate(Path(tmp), args.requests, args.min_kb * 1000)
        lines = path.read_bytes().count(b"\n")
        size = path.stat().st_size
        print(f"log: {lines} requests, {size / 1e6:.1f} MB, smallest >= {args.min_kb} KB")
        baseline = best(lambda: parse(path), args.repeat)

        def run(tokenizer: str) -> Any:
            log = read_requests(path)
            return analyze(log.requests, tokenizer=tokenizer)

        analysis = best(lambda: run("auto"), args.repeat)
        counted = best(lambda: run("o200k"), 1)
        report = run("auto")
        print(f"baseline (orjson parse): {baseline:.3f} s")
        print(f"analysis (auto tokens):  {analysis:.3f} s   ratio {analysis / baseline:.2f}x")
        print(f"analysis (o200k counts): {counted:.3f} s   ratio {counted / baseline:.2f}x")
        summary = report.summary()
        print(
            f"hit rate {summary['hit_rate']:.1%}, causes {sorted(summary['by_cause'])}, "
            f"agreement {summary['agreement']['agreeing']}/{summary['agreement']['compared']}"
        )


if __name__ == "__main__":
    main()
