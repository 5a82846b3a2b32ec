"""Speed of the state directory, as ratios against baselines measured in the same run.

1. ``resume`` with a WAL of 10 lines against one of 1,000,000 lines (target: at most 1.5x),
   because resume reads the log from its end.
2. ``next`` against a bare append plus fsync of the same bytes (target: at most 3x): ``next``
   appends and fsyncs its WAL line, then writes 99_next.md through a temporary file, fsync,
   rename and a folder fsync. The same durable sequence as bare system calls (the floor) is
   timed too, so the report separates what durability costs from ipse's own overhead.
3. ``verify`` of a folder with 1,000 and with 4,000 invariants, each against reading the
   folder's invariants file and log (the baseline): the ratio must not grow with the number of
   invariants (verify is linear; it used to re-hash every recorded prefix, quadratically).

Run: ``python bench/statedir.py [--runs N] [--lines N] [--tmp DIR] [--only verify]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ipse.statedir import _seal as seal
from ipse.statedir import _wal as wal
from ipse.statedir import add_invariant, init, resume, set_next, verify_state
from ipse.statedir._ops import invariant_entry, next_document, sha256_hex


def median_seconds(func: Callable[[], object], runs: int) -> float:
    func()  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_state(folder: Path, lines: int) -> None:
    """A state folder whose WAL has ``lines`` lines (a next step every tenth line)."""
    init(folder, "Port the parser to Rust", "all parser tests pass")
    add_invariant(folder, "No regex-based lexer", "too slow on 1 MB inputs")
    last = wal.tail(folder / ".wal").last
    assert last is not None
    prev, seq = wal.line_hash(last.raw), last.seq
    batch: list[bytes] = []
    with open(folder / ".wal", "ab") as handle:
        while seq < lines - 1:
            seq += 1
            if seq % 10 == 0:
                text = f"step {seq}: write the next part of the tokenizer"
                body = {"kind": "next", "text": text, "sha256": sha256_hex(next_document(text))}
            else:
                body = {"kind": "checkpoint", "text": f"checkpoint {seq}: tests pass"}
            raw = wal.encode(
                {**body, "seq": seq, "prev": prev, "t": wal.utc_now(), "rev": "abc1234"}
            )
            prev = wal.line_hash(raw)
            batch.append(raw)
            if len(batch) >= 10_000:
                handle.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            handle.write(b"\n".join(batch) + b"\n")
    set_next(folder, "Write the tokenizer for string literals")  # the last line


def bench_resume(base: Path, lines: int, runs: int) -> None:
    small, large = base / "small" / "state", base / "large" / "state"
    make_state(small, 10)
    start = time.perf_counter()
    make_state(large, lines)
    built = time.perf_counter() - start
    for folder, count in ((small, 10), (large, lines)):
        with open(folder / ".wal", "rb") as handle:
            seen = sum(1 for _ in handle)
        assert seen == count, (folder, seen, count)
        assert resume(folder).next_step.text == "Write the tokenizer for string literals"
    t_small = median_seconds(lambda: resume(small).text(), runs)
    t_large = median_seconds(lambda: resume(large).text(), runs)
    size = (large / ".wal").stat().st_size / 2**20
    print(f"resume, WAL of 10 lines:        {t_small * 1e6:9.1f} us (median of {runs})")
    print(
        f"resume, WAL of {lines:,} lines: {t_large * 1e6:9.1f} us "
        f"(median of {runs}; WAL {size:.0f} MiB, built in {built:.1f} s)"
    )
    print(f"ratio large/small: {t_large / t_small:.2f} (target <= 1.5)")


def bench_next(base: Path, runs: int) -> None:
    folder = base / "next" / "state"
    init(folder, "Port the parser to Rust")
    text = "Write the tokenizer for string literals, then run the parser tests"
    set_next(folder, text)
    last = wal.tail(folder / ".wal").last
    assert last is not None
    payload = last.raw + b"\n" + next_document(last.text)  # the same bytes next writes
    bare_log = base / "bare.log"
    floor_dir = base / "floor"
    floor_dir.mkdir()

    def one_next() -> None:
        set_next(folder, text)

    def bare() -> None:
        fd = os.open(bare_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)

    def floor() -> None:
        """The durable steps next must take, as bare system calls: append + fsync, then
        temporary file + fsync, rename, fsync of the folder."""
        fd = os.open(floor_dir / "wal", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, last.raw + b"\n")
        os.fsync(fd)
        os.close(fd)
        fd = os.open(floor_dir / ".next.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, next_document(last.text))
        os.fsync(fd)
        os.close(fd)
        os.replace(floor_dir / ".next.tmp", floor_dir / "next")
        dfd = os.open(floor_dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)

    times: dict[str, list[float]] = {"next": [], "bare": [], "floor": []}
    funcs = {"next": one_next, "bare": bare, "floor": floor}
    for func in funcs.values():
        func()  # warm up
    for _ in range(runs):  # interleaved, so drifts in fsync latency hit all three alike
        for name, func in funcs.items():
            start = time.perf_counter()
            func()
            times[name].append(time.perf_counter() - start)
    t_next, t_bare, t_floor = (statistics.median(times[n]) for n in ("next", "bare", "floor"))
    print(f"next:                           {t_next * 1e6:9.1f} us (median of {runs})")
    print(f"bare append + fsync ({len(payload)} bytes): {t_bare * 1e6:9.1f} us")
    print(f"syscall floor of next (3 fsyncs + rename): {t_floor * 1e6:9.1f} us")
    print(f"ratio next/bare: {t_next / t_bare:.2f} (target <= 3)")
    print(f"ratio floor/bare: {t_floor / t_bare:.2f} (what the durable sequence alone costs)")
    print(f"ratio next/floor: {t_next / t_floor:.2f} (ipse's own overhead)")


def make_invariants(folder: Path, count: int) -> None:
    """A state folder with ``count`` invariants, each logged (signed) as ``invariant`` logs it."""
    init(folder, "Port the parser to Rust", "all parser tests pass")
    path = folder / "10_invariants.md"
    data = path.read_bytes()
    hasher = hashlib.sha256(data)
    key = seal.key()
    last = wal.tail(folder / ".wal").last
    assert last is not None
    prev, seq = wal.line_hash(last.raw), last.seq
    lines: list[bytes] = []
    entries: list[bytes] = []
    size = len(data)
    for i in range(count):
        text, reason = f"Rule {i}: never parse token {i} with a regex", f"it broke case {i}"
        entry = invariant_entry(text, reason).encode("utf-8")
        entries.append(entry)
        hasher.update(entry)
        start, size = size, size + len(entry)
        seq += 1
        body = {"kind": "invariant", "text": text, "reason": reason, "start": start}
        body.update(length=size, sha256=hasher.hexdigest(), seq=seq, prev=prev)
        raw = wal.encode({**body, "t": wal.utc_now(), "rev": "abc1234"}, key)
        prev = wal.line_hash(raw)
        lines.append(raw)
    with open(path, "ab") as handle:
        handle.write(b"".join(entries))
    with open(folder / ".wal", "ab") as handle:
        handle.write(b"\n".join(lines) + b"\n")
    wal.anchor(folder / ".wal", wal.read_all(folder / ".wal").records[-1])
    report = verify_state(folder)
    assert report.ok and not report.warnings, report


def bench_verify(base: Path, runs: int) -> None:
    ratios = {}
    for count in (1_000, 4_000):
        folder = base / f"inv{count}" / "state"
        make_invariants(folder, count)

        def baseline(folder: Path = folder) -> None:
            (folder / "10_invariants.md").read_bytes()
            (folder / ".wal").read_bytes()

        t_verify = median_seconds(lambda folder=folder: verify_state(folder), runs)
        t_base = median_seconds(baseline, runs)
        ratios[count] = t_verify / t_base
        print(
            f"verify, {count:,} invariants:       {t_verify * 1e3:9.2f} ms (median of {runs}); "
            f"reading the files {t_base * 1e6:.0f} us; ratio {ratios[count]:.0f}"
        )
    growth = ratios[4_000] / ratios[1_000]
    print(f"ratio growth 4,000/1,000 invariants: {growth:.2f} (linear: about 1; quadratic: 4)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--tmp", type=Path, default=None, help="where to build the folders")
    parser.add_argument("--only", choices=["resume", "next", "verify"], default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.tmp) as name:
        base = Path(name)
        os.environ.setdefault("IPSE_HOME", str(base / "home"))  # the key and anchors stay here
        if args.only in (None, "resume"):
            bench_resume(base, args.lines, args.runs)
        if args.only in (None, "next"):
            bench_next(base, args.runs)
        if args.only in (None, "verify"):
            bench_verify(base, max(3, args.runs // 20))


if __name__ == "__main__":
    main()
