"""Where ``ipse prefix`` spends its time on a big Claude Code session, phase by phase.

Generates a session of ``--size`` MB as `bigsession` does (one long thread), then, in this
process, times each phase of the analysis against the baseline of `bigsession` (``orjson.loads``
of every line, objects dropped), alternating them ``--repeat`` times and keeping the least CPU
of each, so that the machine's changing speed hits all of them alike:

* ``read``: parsing the file into session records as ``ipse prefix`` reads it (`read_session`
  with the replay's digest: each message record's blocks hashed, and dropped);
* ``thread``: the live path and the main thread's request messages (the least time of
  reading and building the thread, less the least time of reading);
* ``requests``: the rest of `read_requests` (request bodies, journal, checks), given the
  session read and its thread built;
* ``replay``: `analyze` (flattening, the cache simulation, causes, costs);
* ``json``: the ``--json`` document.

The command's own CPU (``bigsession``) adds the interpreter's start and imports (about 0.1 s),
and runs cold: fresh memory costs page faults that a warm process does not pay again.

    python bench/prefix_phases.py --size 72 --repeat 5
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigsession import generate, parse
from ipse.prefix import _requests
from ipse.prefix._report import analyze
from ipse.prefix._segments import digest
from ipse.transcript._formats import claude_code, claude_code_requests
from ipse.transcript._formats.claude_code import read_session
from ipse.transcript._formats.claude_code_requests import billed_thread


def _given(value: Any, *args: Any, **kwargs: Any) -> Any:
    """A step of `read_requests` (reading the session, building its thread) answering with
    what was built before it."""
    return value


@contextmanager
def no_gc() -> Iterator[None]:
    """The collector off while parsed records pile up, as the command line runs a one-shot
    command (the library leaves the collector to its caller)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def phases(path: Path) -> dict[str, float]:
    """CPU seconds of each step, one run: the baseline, ``read`` (the records), ``load`` (the
    records and the main thread's request messages), ``requests`` (`read_requests` given
    those), ``replay`` and ``json``."""
    clock = time.process_time
    out: dict[str, float] = {}
    start = clock()
    parse(path)
    out["baseline"] = clock() - start
    with no_gc():
        start = clock()
        read_session(path, digest=digest)
        out["read"] = clock() - start
        start = clock()
        session = read_session(path, digest=digest)
        thread = billed_thread(session)
        out["load"] = clock() - start
        with (
            mock.patch.object(claude_code, "read_session", functools.partial(_given, session)),
            mock.patch.object(
                claude_code_requests, "billed_thread", functools.partial(_given, thread)
            ),
        ):
            start = clock()
            log = _requests.read_requests(path)
            out["requests"] = clock() - start
        start = clock()
        report = analyze(log.requests, warnings=log.warnings)
        out["replay"] = clock() - start
        start = clock()
        orjson.dumps(report.to_json())
        out["json"] = clock() - start
        del log, report
    gc.collect()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=72, help="MB of session")
    parser.add_argument("--repeat", type=int, default=3, help="runs (least CPU of each phase)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = generate(Path(tmp) / "session.jsonl", args.size)
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, seconds in phases(path).items():
                best[name] = min(best.get(name, seconds), seconds)
    base = best.pop("baseline")
    best["thread"] = max(0.0, best.pop("load") - best["read"])  # (least load less least read)
    best = {name: best[name] for name in ("read", "thread", "requests", "replay", "json")}
    print(f"session {args.size:g} MB: orjson parse {base:.3f} s CPU (least of {args.repeat})")
    for name, seconds in best.items():
        print(f"  {name:<9} {seconds:7.3f} s CPU {seconds / base:6.2f}x parse")
    total = sum(best.values())
    print(f"  {'all':<9} {total:7.3f} s CPU {total / base:6.2f}x parse (warm, without startup)")


if __name__ == "__main__":
    main()
