"""What each speed trick at ipse's edges saves, measured by undoing it: the four commands whose
start is waited on, each run as it is and again with one trick undone (the module it avoids
imported first, or a lazy package's modules all imported first, as an eager ``__init__``
would), each in a fresh process; printed as the share the undone trick adds.

- ``hook``: the SessionStart hook, ``ipse state resume --hook claude-code`` on an initialised
  state folder, as the ``ipse`` script runs it. It imports no `dataclasses` (its classes are
  `ipse._plain.Plain`s), no `typing` (``TYPE_CHECKING = False``), no `hashlib`
  (`ipse._sha256`), and of the lazy packages ``ipse`` and ``ipse.statedir`` only what it uses.
- ``mcp``: ``ipse mcp``'s imports before it answers ``initialize`` (``ipse.mcp._stdio``,
  which imports no module of the lazy ``ipse.mcp`` but itself).
- ``prefix``: ``ipse prefix examples/tool_heavy.jsonl`` (a 40 KB Claude Code session), which
  imports of the lazy ``ipse.transcript`` and ``ipse.prefix`` what the replay needs.
- ``handoff``: ``ipse handoff SESSION --at now -o OUT`` on the largest shared Claude Code
  session (else the 40 KB one), which counts its tokens from o200k's rank table
  (`ipse.cli._quick_count`) rather than building tiktoken's encoder first.

The count is of instructions under valgrind (cachegrind) where valgrind is installed: it does
not drift with the machine's load, so one run each is enough; else the best of N processor
times (user + system). The rule the tricks follow: docs/development.md, "Speed at the edges".

    python bench/edge_tricks.py [--repeat N] [--time]
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigsession import compile_ipse

REPO = Path(__file__).resolve().parents[1]
SESSION = REPO / "examples" / "tool_heavy.jsonl"
BIG = (
    REPO / ".." / "shared" / "data" / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
).resolve()
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def _entry(*argv: str) -> str:
    return f"import sys; sys.argv = {['ipse', *argv]!r}; from ipse.cli._entry import entry; entry()"


def _eager(package: str) -> str:
    """The imports an eager ``__init__`` of a lazy package would run: every module it serves."""
    modules = importlib.import_module(package)._MODULES  # type: ignore[attr-defined]
    return "".join(f"import {package}.{module}; " for module in modules)


def kinds(work: Path) -> dict[str, dict[str, str]]:
    """command -> (what is undone -> the code a process runs); "as it is" first."""
    hook = _entry("state", "resume", "--hook", "claude-code")
    session = BIG if BIG.is_file() else SESSION
    handoff = _entry("handoff", str(session), "--at", "now", "-o", str(work / "out.json"))
    encoder = "from ipse.tokens import default_counter; default_counter().load(); "
    prefix = _entry("prefix", str(SESSION))
    mcp = "import ipse.mcp._stdio"
    return {
        "hook": {
            "as it is": hook,
            "+ dataclasses": "import dataclasses; " + hook,
            "+ typing": "import typing; " + hook,
            "+ hashlib": "import hashlib; " + hook,
            "+ eager ipse (ipse.transcript)": _eager("ipse.transcript") + hook,
            "+ eager ipse.statedir": _eager("ipse.statedir") + hook,
        },
        "mcp": {"as it is": mcp, "+ eager ipse.mcp": _eager("ipse.mcp") + mcp},
        "prefix": {
            "as it is": prefix,
            "+ eager ipse.transcript": _eager("ipse.transcript") + prefix,
            "+ eager ipse.prefix": _eager("ipse.prefix") + prefix,
        },
        "handoff": {"as it is": handoff, "+ tiktoken's encoder": encoder + handoff},
    }


def instructions(code: str, env: dict[str, str], cwd: Path) -> float:
    """Instructions a fresh interpreter executes running ``code`` (valgrind's ``I refs``)."""
    valgrind = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
    ]
    done = subprocess.run(
        [*valgrind, sys.executable, "-c", code],
        env={**env, "PYTHONHASHSEED": "0"},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{code!r} failed: {done.stderr[-2000:]}")
    return float(found.group(1).replace(",", ""))


def cpu_seconds(code: str, env: dict[str, str], cwd: Path) -> float:
    """Processor seconds (user + system) of a fresh interpreter running ``code``."""
    child = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=cwd, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{code!r} failed")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs each, timed (best kept)")
    parser.add_argument("--time", action="store_true", help="time even where valgrind is")
    args = parser.parse_args()
    counting = shutil.which("valgrind") is not None and not args.time
    compile_ipse()
    work = Path(tempfile.mkdtemp(prefix="ipse-edge-"))
    env = {**os.environ, "IPSE_HOME": str(work / "home")}
    try:
        subprocess.run(
            [sys.executable, "-m", "ipse", "state", "init", "--goal", "Port the parser"],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )
        table = kinds(work)
        best = {(c, k): float("inf") for c, ks in table.items() for k in ks}
        for _ in range(1 if counting else args.repeat):  # interleaved: drift hits all alike
            for (command, kind), seen in best.items():
                code = table[command][kind]
                measured = (instructions if counting else cpu_seconds)(code, env, work)
                best[command, kind] = min(seen, measured)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    unit = "instructions (valgrind)" if counting else f"ms of processor, best of {args.repeat}"
    print(f"each command as it is, and with one trick undone; {unit}")
    for command, undone in table.items():
        base = best[command, "as it is"]
        for kind in undone:
            value = best[command, kind]
            shown = f"{value / 1e6:8.1f} M" if counting else f"{value * 1000:8.1f} ms"
            added = "" if kind == "as it is" else f"  {value / base - 1:+6.0%}"
            print(f"  {command:7} {kind:32} {shown}{added}")


if __name__ == "__main__":
    main()
