"""Big Claude Code sessions: ``prefix``, ``inspect`` and ``handoff`` against an orjson parse.

Generates, into a temporary folder, Claude Code session files of the sizes asked for (MB) by
chaining copies of the largest shared session into one long thread: every copy gets fresh
record ids, response ids and tool-call ids, times shifted after the previous copy, and its root
hung under the previous copy's last record, so the whole file is one conversation the way a
long-running session writes it (``--keep-compactions`` keeps each copy's compaction boundary;
by default the boundaries become plain records, the worst case: one segment, every turn a
request with the whole history before it). ``--big-string MB`` also writes a session whose one
tool result is a single string of that size (``--string-kind``: lines, base64, letters).

For each file and command, ``--runs`` times: the baseline (``orjson.loads`` of every line, in
this process, the least CPU of ``--repeat``), then at once the command in a child process
(``python -m ipse ...`` with its output discarded), with the child's CPU time and peak resident
memory from ``wait4``. Each run's ratio is to the baseline measured just before it, and the
run with the median ratio is printed: on a shared or throttled machine the speed drifts by a
third within minutes, and a baseline measured once would price later commands at another
speed. CPU time, not wall time, is compared, so that other work on the machine does not
count; it includes the interpreter's start (about 0.1 s) and, for ``inspect`` and ``handoff``,
building the o200k encoder (about 0.3 s).
``--baseline child`` measures the parse in a process of its own instead, just before each
run, so that both sides pay an interpreter's start and a fresh process.
Prints CPU seconds, the ratio to the baseline (and the baseline), wall seconds, peak MB,
peak memory over the file size, and the same above the peak of the command on the file's
first 256 KB (what it needs whatever the input: the interpreter, its modules, and where it
counts tokens the o200k encoder, about 60 MB).

``--commands`` also takes ``prefix-text`` and ``inspect-messages`` (the human output, a table
row per request, per message, piped), ``report`` (the HTML page), and two baselines run as the
commands are, in a process of their own: ``parse`` (the baseline's parse, which shows what the
interpreter's start and a fresh process add to it) and ``parse-keep`` (a parse that keeps every
record it read, as a command must: cold memory's page faults included).

    python bench/bigsession.py --sizes 18 36 72 [--commands prefix inspect handoff]
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.generated import chained_session

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "claude-code"
SOURCE = SHARED / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
HEAD_BYTES = 256 * 1024  # the small session each command's fixed memory is measured on


def generate(path: Path, megabytes: float, keep_compactions: bool = False) -> Path:
    """A session file of at least ``megabytes`` MB: copies of the shared session, chained."""
    return chained_session(path, megabytes, SOURCE, keep_compactions=keep_compactions)


def big_text(megabytes: float, kind: str) -> str:
    """``lines``: 100-character lines; ``base64``: one line of base64 (an encoded file);
    ``letters``: one run of letters (the worst case for a byte-pair tokenizer)."""
    size = int(megabytes * 1_000_000)
    if kind == "lines":
        return ("x" * 99 + "\n") * (size // 100)
    if kind == "base64":
        return base64.b64encode(random.Random(0).randbytes(size * 3 // 4)).decode()
    return "x" * size


def generate_big_string(path: Path, megabytes: float, kind: str = "lines") -> Path:
    """The shared session with one tool result replaced by a single string of that size."""
    records = [orjson.loads(line) for line in SOURCE.read_bytes().splitlines() if line.strip()]
    text = big_text(megabytes, kind)
    done = False
    with path.open("wb") as out:
        for record in records:
            content = (record.get("message") or {}).get("content")
            if not done and record.get("type") == "user" and isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        block["content"] = text
                        done = True
                        break
            out.write(orjson.dumps(record) + b"\n")
    return path


def parse(path: Path) -> None:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs (CPU, not wall: the machine may be shared)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


# The baseline's parse in a process of its own (``parse``), and a parse that keeps what it
# read (``parse-keep``), as every command must: cold memory and the interpreter's start
# priced alike, for comparison with the commands.
_PARSE = """import sys, orjson
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        if line.strip():
            orjson.loads(line)
"""
_PARSE_KEEP = """import gc, sys, orjson
gc.disable()
with open(sys.argv[1], "rb") as handle:
    kept = [orjson.loads(line) for line in handle if line.strip()]
"""


def command(name: str, path: Path, folder: Path) -> list[str]:
    """The child's arguments (after the interpreter) for the command called ``name``."""
    if name == "parse":
        return ["-c", _PARSE, str(path)]
    if name == "parse-keep":
        return ["-c", _PARSE_KEEP, str(path)]
    return ["-m", "ipse", *_ipse_command(name, path, folder)]


def _ipse_command(name: str, path: Path, folder: Path) -> list[str]:
    if name == "prefix":
        return ["prefix", str(path), "--json"]
    if name == "prefix-text":  # the human output (a table row per request), piped
        return ["prefix", str(path)]
    if name == "inspect":
        return ["inspect", str(path), "--json"]
    if name == "inspect-messages":  # the human output with a row per message, piped
        return ["inspect", str(path), "--messages"]
    if name == "report":  # the offline HTML page
        return ["report", str(path), "-o", str(folder / "report.html")]
    if name == "handoff":
        return ["handoff", str(path), "--at", "now", "-o", str(folder / "out.json")]
    raise SystemExit(f"unknown command {name}")


def compile_ipse() -> None:
    """Write the bytecode of the ipse the children will import, as an installed package has
    it: with PYTHONDONTWRITEBYTECODE set, or stale bytecode after an edit, every child would
    compile ipse's modules again (about 0.1 s of CPU each), which is not the command's cost."""
    found = subprocess.run(
        [sys.executable, "-c", "import ipse, os; print(os.path.dirname(ipse.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", found.stdout.strip()], check=True)


def run(args: list[str], timeout: float, folder: Path) -> tuple[float, float, float, int]:
    """CPU seconds, wall seconds, peak resident MB, exit status of ``python ARGS``, run with
    an ipse home of its own in ``folder`` (a handoff finds nothing archived before it)."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=folder))
    try:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, *args],
            env={**os.environ, "IPSE_HOME": str(home)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                return float("inf"), float("inf"), usage.ru_maxrss / 1024, -9
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1) and child.stderr is not None:
            sys.stderr.write(child.stderr.read().decode(errors="replace")[-2000:])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    cpu = usage.ru_utime + usage.ru_stime
    return cpu, elapsed, usage.ru_maxrss / 1024, code


def report(
    path: Path,
    label: str,
    commands: list[str],
    repeat: int,
    timeout: float,
    runs: int = 1,
    baseline: str = "warm",
) -> None:
    """Print each command's measure; ``baseline``: ``warm`` (the parse in this process, least
    of ``repeat``) or ``child`` (the parse in a process of its own, as the command runs)."""
    size = path.stat().st_size
    print(f"{label}: {size / 1e6:.1f} MB", flush=True)
    head = _head(path)
    for name in commands:
        measured = []
        for _ in range(runs):
            if baseline == "child":
                base = run(command("parse", path, path.parent), timeout, path.parent)[0]
            else:
                base = best(lambda: parse(path), repeat)
            seconds, wall, peak, code = run(command(name, path, path.parent), timeout, path.parent)
            measured.append((seconds / base, seconds, base, wall, peak, code))
        measured.sort()
        ratio, seconds, base, wall, peak, code = measured[len(measured) // 2]
        spread = f" [{measured[0][0]:.2f}-{measured[-1][0]:.2f}]" if runs > 1 else ""
        fixed = run(command(name, head, path.parent), timeout, path.parent)[2]
        print(
            f"  {name:<16} {seconds:8.2f} s CPU {ratio:7.2f}x parse{spread} ({base:.3f} s)"
            f" ({wall:6.2f} s wall)   peak {peak:6.0f} MB {peak * 2**20 / size:5.2f}x file"
            f" ({(peak - fixed) * 2**20 / size:4.2f}x above {fixed:3.0f} MB)   exit {code}",
            flush=True,
        )
    head.unlink()


def _head(path: Path, size: int = HEAD_BYTES) -> Path:
    """The file's first whole lines, about ``size`` bytes: a session of the same kind, whose
    peak memory is what a command needs whatever the input (the interpreter, its modules, the
    o200k encoder where it counts tokens)."""
    head = path.with_name(f"head-{path.name}")
    with path.open("rb") as source, head.open("wb") as out:
        written = 0
        for line in source:
            out.write(line)
            written += len(line)
            if written >= size:
                break
    return head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="*", default=[18, 36, 72])
    parser.add_argument(
        "--commands", nargs="*", default=["prefix", "inspect", "handoff"], help="what to run"
    )
    parser.add_argument("--big-string", type=float, default=0, help="MB of one tool result")
    parser.add_argument("--string-kind", choices=["lines", "base64", "letters"], default="lines")
    parser.add_argument("--keep-compactions", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the baseline (least CPU)")
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs of each command (the median ratio is shown, the least and most in brackets)",
    )
    parser.add_argument(
        "--baseline",
        choices=["warm", "child"],
        default="warm",
        help="the parse in this process, least of --repeat (warm), or in a process of its own "
        "measured just before each run (child: the interpreter's start and a fresh process "
        "priced as the command's)",
    )
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    compile_ipse()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for megabytes in args.sizes:
            path = generate(folder / f"s{megabytes:g}.jsonl", megabytes, args.keep_compactions)
            report(
                path,
                f"session {megabytes:g} MB",
                args.commands,
                args.repeat,
                args.timeout,
                args.runs,
                args.baseline,
            )
            path.unlink()
        if args.big_string:
            path = generate_big_string(folder / "big.jsonl", args.big_string, args.string_kind)
            label = f"one {args.big_string:g} MB string ({args.string_kind})"
            report(path, label, args.commands, 1, args.timeout)


if __name__ == "__main__":
    main()
