"""What the SessionStart hook would pay for ``dataclasses``: the hook as it is, against the
same hook with ``dataclasses`` imported first (what making its value classes dataclasses would
add to its start), each a fresh process, interleaved, the best of N CPU (user + system) and
wall times kept; a bare ``python -c pass`` for scale.

The hook is ``ipse state resume --hook claude-code`` on an initialised state folder, run as the
``ipse`` script runs it (`ipse.cli._entry.entry`).

    python bench/hook_plain.py [--repeat N]
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

HOOK = (
    "import sys; sys.argv = ['ipse', 'state', 'resume', '--hook', 'claude-code']; "
    "from ipse.cli._entry import entry; entry()"
)
KINDS = {
    "python -c pass": "pass",
    "hook": HOOK,
    "hook + import dataclasses": "import dataclasses; " + HOOK,
}


def run_once(code: str, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=cwd, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{code!r} failed")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ipse-hook-plain-"))
    env = {**os.environ, "IPSE_HOME": str(work / "home")}
    try:
        subprocess.run(
            [sys.executable, "-m", "ipse", "state", "init", "--goal", "Port the parser"],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )
        wall = dict.fromkeys(KINDS, float("inf"))
        cpu = dict.fromkeys(KINDS, float("inf"))
        for _ in range(args.repeat):
            for name, code in KINDS.items():
                seconds, used = run_once(code, env, work)
                wall[name], cpu[name] = min(wall[name], seconds), min(cpu[name], used)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"best of {args.repeat} fresh processes each")
    for name in KINDS:
        print(f"  {name:<28} wall {wall[name] * 1000:6.1f} ms   cpu {cpu[name] * 1000:6.1f} ms")
    added_wall = wall["hook + import dataclasses"] - wall["hook"]
    added_cpu = cpu["hook + import dataclasses"] - cpu["hook"]
    print(
        f"dataclasses adds {added_wall * 1000:.1f} ms wall ({added_wall / wall['hook']:.0%}), "
        f"{added_cpu * 1000:.1f} ms cpu ({added_cpu / cpu['hook']:.0%}) to the hook"
    )


if __name__ == "__main__":
    main()
