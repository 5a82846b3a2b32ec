"""Instructions, not seconds: a command against an orjson parse of the same file, counted by
valgrind (cachegrind), so that two runs or two checkouts compare without the machine's noise.

CPU time on a shared or throttled machine drifts by a third within minutes, more than most
changes to a command are worth. The count of instructions a process executes does not drift:
with the same hash seed it is the same to a few in a million from run to run. It does not see
everything time does (cache misses, page faults, the kernel's time), so it complements
`bigsession` rather than replacing it.

Generates a session of ``--size`` MB as `bigsession` does, then counts, each in a process of its
own: the parse (``orjson.loads`` of every line, the interpreter's start and orjson's import
included) and each of ``--commands`` (``prefix`` by default, also ``inspect`` and ``handoff``),
from this checkout and, with ``--source DIR``, from another checkout's ``src`` (the numbers
before a change). Needs valgrind; a run of a few MB takes a few seconds per command.

``--phases`` splits ``prefix`` into its steps as `prefix_phases` does (the interpreter's start
and the imports; reading the records; building the thread; the rest of the requests; the
replay; the JSON document): a child stops right after each step (``os._exit``, no teardown),
and each step's count is the difference from the child that stopped before it.

    python bench/instructions.py --size 8 [--commands prefix inspect] [--source /tmp/old/src]
    python bench/instructions.py --size 18 --phases [--source /tmp/old/src]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigsession import command, compile_ipse, generate

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(args: list[str], env: dict[str, str], cwd: Path) -> int:
    """Instructions the interpreter executes running ``args`` (valgrind's ``I refs``)."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            *args,
        ],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    found = _REFS.search(done.stderr)
    if found is None:
        raise SystemExit(f"valgrind gave no count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


# The steps of ``ipse prefix`` on a session, for ``--phases``: the child runs them in order and
# ends the process, without freeing anything, right after the one named by its second argument.
PHASES = ("start", "read", "thread", "requests", "replay", "json")
_PHASES = """import os, sys
path, stop = sys.argv[1], sys.argv[2]
import gc
from ipse.cli import _fast_prefix
from ipse.prefix import _requests
from ipse.prefix._report import analyze
from ipse.prefix._segments import digest
try:
    from ipse.transcript._formats import claude_code, claude_code_requests
except ImportError:  # a checkout from before the readers were ipse.transcript's own
    from ipse.transcript.formats import claude_code, claude_code_requests
import orjson
def done(step):
    if step == stop:
        os._exit(0)
done("start")
gc.disable()  # (as the command line does for a one-shot command)
session = claude_code.read_session(path, digest=digest)
done("read")
thread = claude_code_requests.billed_thread(session)
done("thread")
claude_code.read_session = lambda *args, **kwargs: session
claude_code_requests.billed_thread = lambda *args, **kwargs: thread
log = _requests.read_requests(path)
done("requests")
report = analyze(log.requests, warnings=log.warnings, merged=log.merged)
done("replay")
orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2)
done("json")
"""


def phases(path: Path, env: dict[str, str], folder: Path) -> dict[str, int]:
    """Instructions of each of `PHASES` of ``prefix`` on ``path``."""
    counts: dict[str, int] = {}
    before = 0
    for step in PHASES:
        upto = instructions(["-c", _PHASES, str(path), step], env, folder)
        counts[step] = upto - before
        before = upto
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=8, help="session size in MB")
    parser.add_argument("--commands", nargs="+", default=["prefix"])
    parser.add_argument("--source", help="also count another checkout's src folder")
    parser.add_argument(
        "--phases", action="store_true", help="count prefix step by step (see above)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    compile_ipse()
    if args.source:
        subprocess.run([sys.executable, "-m", "compileall", "-q", args.source], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = generate(folder / "session.jsonl", args.size)
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        parse = instructions(command("parse", path, folder), env, folder)
        print(f"session {args.size:g} MB: parse {parse / 1e6:,.0f}M instructions")
        if args.phases:
            _print_phases(path, env, folder, parse, args.source)
            return
        for name in args.commands:
            # each run in an ipse home of its own: a handoff finds no archive written before,
            # and another checkout no database its own version did not make
            here_env = {**env, "IPSE_HOME": str(folder / f"home-{name}")}
            here = instructions(command(name, path, folder), here_env, folder)
            line = f"  {name:10s} {here / 1e6:8,.0f}M  {here / parse:5.2f}x parse"
            if args.source:
                other_env = {
                    **env,
                    "PYTHONPATH": str(Path(args.source).resolve()),
                    "IPSE_HOME": str(folder / f"home-{name}-source"),
                }
                other = instructions(command(name, path, folder), other_env, folder)
                line += f"   --source: {other / 1e6:,.0f}M  {other / parse:5.2f}x parse"
                line += f"   this / source {here / other:.3f}"
            print(line)


def _print_phases(
    path: Path, env: dict[str, str], folder: Path, parse: int, source: str | None
) -> None:
    here = phases(path, env, folder)
    other = (
        phases(path, {**env, "PYTHONPATH": str(Path(source).resolve())}, folder) if source else None
    )
    for step in PHASES:
        line = f"  {step:10s} {here[step] / 1e6:8,.0f}M  {here[step] / parse:5.2f}x parse"
        if other is not None:
            line += f"   --source: {other[step] / 1e6:,.0f}M   this / source"
            line += f" {here[step] / other[step]:.3f}"
        print(line)
    total = sum(here.values())
    print(f"  {'all':10s} {total / 1e6:8,.0f}M  {total / parse:5.2f}x parse")


if __name__ == "__main__":
    main()
