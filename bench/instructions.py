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

    python bench/instructions.py --size 8 [--commands prefix inspect] [--source /tmp/old/src]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=8, help="session size in MB")
    parser.add_argument("--commands", nargs="+", default=["prefix"])
    parser.add_argument("--source", help="also count another checkout's src folder")
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


if __name__ == "__main__":
    main()
