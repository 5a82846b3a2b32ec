"""Start-up cost of the ipse command line, as ratios against processes measured in the same run.

1. The SessionStart hook, ``ipse state resume --hook claude-code`` on an initialised state
   folder, against a bare ``python -c "import json"`` (target: at most 1.5x). It runs at every
   session start and after every compaction, so what it imports is what it costs.
2. The end-to-end ``ipse handoff SESSION --at now -o OUT`` (read, strip, verify, write, archive
   into a fresh home, print the measurement table, which counts tokens with o200k_base) against
   a ``python -c`` process that parses every line of the same file with orjson and dumps every
   record (target: at most 5x).
3. For reference: ``ipse --version``, and loading the o200k_base vocabulary in a fresh process.

Every measurement is a fresh process; the kinds are interleaved (drift hits all alike) and the
best of N is kept, of the wall-clock time and of the CPU time (user + system, which a machine
shared with other work disturbs less). The session is the largest shared Claude Code session
(about 3 MB) when ``../shared/data`` is there, else ``examples/tool_heavy.jsonl``; or name one.

    python bench/startup.py [--repeat N] [-m] [SESSION.jsonl]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigsession import compile_ipse

REPO = Path(__file__).resolve().parents[1]
BIG = (
    REPO / ".." / "shared" / "data" / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
).resolve()
SMALL = REPO / "examples" / "tool_heavy.jsonl"

ORJSON_ROUND_TRIP = (
    "import sys, orjson\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "records = [orjson.loads(x) for x in data.split(b'\\n') if x.strip()]\n"
    "sys.stdout.buffer.write(b''.join(orjson.dumps(r) for r in records)[:0])\n"
)
HOOK = "ipse state resume --hook claude-code"
LOAD_VOCABULARY = "from ipse._tokens import default_counter; default_counter().count('x')"


def ipse_command(module: bool) -> list[str]:
    """The installed ``ipse`` script next to this interpreter, else ``python -m ipse``."""
    script = Path(sys.executable).with_name("ipse")
    return [str(script)] if script.exists() and not module else [sys.executable, "-m", "ipse"]


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system) of one process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {errors.decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?", type=Path, default=BIG if BIG.is_file() else SMALL)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("-m", dest="module", action="store_true", help="run python -m ipse")
    args = parser.parse_args()
    session: Path = args.session.resolve()
    compile_ipse()
    ipse = ipse_command(args.module)
    work = Path(tempfile.mkdtemp(prefix="ipse-startup-"))
    env = {**os.environ, "IPSE_HOME": str(work / "home")}
    try:
        subprocess.run(
            [*ipse, "state", "init", "--goal", "Port the parser", "--done", "tests pass"],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )

        def handoff() -> list[str]:
            # A fresh home each run: the removed blocks are archived anew, as on first use.
            shutil.rmtree(work / "home", ignore_errors=True)
            return [*ipse, "handoff", str(session), "--at", "now", "-o", str(work / "out.json")]

        kinds = {
            "python -c 'import json'": lambda: [sys.executable, "-c", "import json"],
            HOOK: lambda: [
                *ipse,
                *("state", "resume", "--hook", "claude-code"),
            ],
            "ipse --version": lambda: [*ipse, "--version"],
            "load o200k_base": lambda: [sys.executable, "-c", LOAD_VOCABULARY],
            "python -c orjson parse+dump": lambda: [
                sys.executable,
                *("-c", ORJSON_ROUND_TRIP, str(session)),
            ],
            "ipse handoff": handoff,
        }
        wall = dict.fromkeys(kinds, float("inf"))
        cpu = dict.fromkeys(kinds, float("inf"))
        for _ in range(args.repeat):
            for name, argv in kinds.items():
                seconds, used = run_once(argv(), env, work)
                wall[name], cpu[name] = min(wall[name], seconds), min(cpu[name], used)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"startup: best of {args.repeat} fresh processes each; session {session.name}")
    print(f"  ({session.stat().st_size:,} bytes)")
    print(f"  {'':<40} {'wall':>8}    {'cpu':>8}")
    for name in kinds:
        print(f"  {name:<40} {wall[name] * 1000:8.1f} ms {cpu[name] * 1000:8.1f} ms")
    for label, (measured, base, target) in {
        "hook / python -c 'import json'": (HOOK, "python -c 'import json'", 1.5),
        "handoff / orjson parse+dump process": ("ipse handoff", "python -c orjson parse+dump", 5),
    }.items():
        print(
            f"{label:<37} wall {wall[measured] / wall[base]:5.2f}x  "
            f"cpu {cpu[measured] / cpu[base]:5.2f}x  (target <= {target}x)"
        )


if __name__ == "__main__":
    main()
