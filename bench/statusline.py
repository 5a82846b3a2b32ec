"""``ipse usage statusline``: the time Claude Code waits for it after each message.

Claude Code runs the status line command after every message, with a JSON document on stdin
(as Claude Code 2.1.332 sends it: ``session_id``, ``transcript_path``, ``model``, ``cost``,
``context_window`` ...). Measured on the largest shared Claude Code session (with its
sub-agents' files) copied into a scratch folder, through the ``ipse`` executable's own entry
(`ipse.cli._entry`): the first run (nothing read before: the whole transcript is read), a run
after one call was appended (only that is read), and a run when nothing changed; beside them
a bare interpreter importing ``json``, the floor any Python status line pays. Each is the
best of ``--runs`` runs, in wall milliseconds and processor milliseconds (user + system; on a
busy machine the wall time also counts other work), and as a ratio to the floor.

    python bench/statusline.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "claude-code"
SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
ENTRY = "import sys; sys.argv = ['ipse', 'usage', 'statusline']; " \
        "from ipse.cli._entry import entry; entry()"  # fmt: skip


def once(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """Wall and processor milliseconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(done.stderr.decode(errors="replace")[-2000:])
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall * 1000, cpu * 1000


def best(
    runs: int, make: object, argv: list[str], stdin: bytes, env: dict[str, str]
) -> tuple[float, float]:
    results = []
    for _ in range(runs):
        if callable(make):
            make()
        results.append(once(argv, stdin, env))
    return min(r[0] for r in results), min(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ipse-statusline-"))
    try:
        project = folder / "projects" / "-tmp-project"
        project.mkdir(parents=True)
        transcript = project / f"{SESSION}.jsonl"
        shutil.copy(SHARED / f"{SESSION}.jsonl", transcript)
        shutil.copytree(SHARED / SESSION, project / SESSION)
        lines = transcript.read_bytes().splitlines(keepends=True)
        last_call = next(line for line in reversed(lines) if b'"usage"' in line)
        stdin = json.dumps({
            "session_id": SESSION, "transcript_path": str(transcript), "cwd": str(folder),
            "model": {"id": "claude-opus-4-6", "display_name": "Opus 4.6"},
            "version": "2.1.332", "cost": {"total_cost_usd": 1.0},
            "context_window": {"context_window_size": 200000, "current_usage": None},
        }).encode()  # fmt: skip
        home = folder / "ipse"
        env = {**os.environ, "IPSE_HOME": str(home)}
        python = sys.executable
        floor = best(args.runs, None, [python, "-c", "import json"], b"", env)
        command = [python, "-c", ENTRY]
        first = best(
            args.runs, lambda: shutil.rmtree(home, ignore_errors=True), command, stdin, env
        )

        def append() -> None:
            with transcript.open("ab") as out:
                out.write(last_call.replace(b'"msg_', b'"msg_%d' % time.perf_counter_ns()))

        appended = best(args.runs, append, command, stdin, env)
        unchanged = best(args.runs, None, command, stdin, env)
        size = transcript.stat().st_size / 1e6
        print(f"transcript {size:.1f} MB; best of {args.runs}")
        print(f"{'':28}{'wall ms':>9}{'cpu ms':>9}{'x floor (cpu)':>15}")
        rows = (("python -c 'import json'", floor), ("first run", first),
                ("one call appended", appended), ("nothing changed", unchanged))  # fmt: skip
        for name, (wall, cpu) in rows:
            print(f"{name:28}{wall:9.1f}{cpu:9.1f}{cpu / floor[1]:15.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
