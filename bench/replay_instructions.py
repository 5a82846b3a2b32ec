"""Instructions of one prefix replay (``read_requests`` + ``analyze`` of a session, in process),
counted by valgrind (cachegrind) for each ``src`` folder named: the count of three replays less
that of one, halved, so that the interpreter's start and the imports are left out.

Made to compare two checkouts of one change to the prefix package's value types (a type as a
msgspec struct or as a dataclass); instructions, unlike seconds, do not drift on a shared
machine. The session is the largest shared Claude Code session when ``../shared/data`` is
there, else ``examples/tool_heavy.jsonl``; or name one. Needs valgrind; about a minute a folder.

    python bench/replay_instructions.py SRC [SRC ...] [--session FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIG = REPO / ".." / "shared" / "data" / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
SMALL = REPO / "examples" / "tool_heavy.jsonl"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
REPLAY = (
    "from ipse.prefix._report import analyze\n"
    "from ipse.prefix._requests import read_requests\n"
    "for _ in range({n}): analyze(read_requests({path!r}).requests)\n"
)


def count(src: Path, session: Path, n: int) -> int:
    """Instructions of a process that imports the package and replays ``n`` times."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    code = REPLAY.format(n=n, path=str(session))
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
    valgrind.append("--cachegrind-out-file=/dev/null")
    done = subprocess.run(
        [*valgrind, sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = _REFS.search(done.stderr)
    assert found, done.stderr
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--session", type=Path, default=BIG if BIG.is_file() else SMALL)
    args = parser.parse_args()
    first = None
    for src in args.sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
        one, three = count(src, args.session, 1), count(src, args.session, 3)
        replay = (three - one) // 2
        first = first or replay
        print(f"{src!s:40} replay {replay / 1e6:8.1f}M   import+one {one / 1e6:8.1f}M", end="")
        print(f"   replay / first {replay / first:.3f}")


if __name__ == "__main__":
    main()
