"""The Claude Code journey (tests/journey/test_claude_code_journey.py) run N times in a row: a
flaky loop is a broken loop, so this prints how many runs passed, which seams broke in the
others, and the time of each run against a baseline measured in the same run (one bare
``claude -p --bare`` turn straight to the same kind of scripted upstream, no ipse: the client's
own start-up, which the journey pays three times).

Loopback only: the scripted upstream, the proxy (on 127.0.0.1:8765, where ``ipse install
--proxy`` points Claude Code) and the MCP server; every process a run starts is stopped by it.
Each run has its own fresh folder under a temporary directory, removed afterwards (``--keep``
keeps them). Exit status 1 when any run failed.

    python bench/journey.py [--runs 10] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.journey._world import Broken, run  # noqa: E402
from tests.journey.claude_code import journey  # noqa: E402
from tests.support.anthropic_upstream import anthropic_upstream  # noqa: E402


def claude_binary() -> str:
    cached = Path.home() / ".cache" / "ipse-test" / "claude-code" / "node_modules" / ".bin"
    for candidate in (os.environ.get("IPSE_CLAUDE_BIN"), str(cached / "claude")):
        if candidate and Path(candidate).exists():
            return candidate
    found = shutil.which("claude")
    if found is None:
        raise SystemExit("the Claude Code CLI is not installed (npm i @anthropic-ai/claude-code)")
    return found


def bare_turn(claude: str, folder: Path) -> float:
    """Seconds of one ``claude -p --bare`` turn to a scripted upstream, without ipse."""
    folder.mkdir()
    env = {
        **os.environ,
        "HOME": str(folder),
        "ANTHROPIC_API_KEY": "sk-ant-bench",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    with anthropic_upstream(["Hello."]) as upstream:
        env["ANTHROPIC_BASE_URL"] = upstream.url
        started = time.monotonic()
        done = run([claude, "-p", "Say hello.", "--bare"], cwd=folder, env=env, timeout=120)
        seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the bare baseline turn failed: {done.stderr[-400:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="journeys in a row (default 10)")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder")
    options = parser.parse_args()
    claude = claude_binary()
    top = Path(tempfile.mkdtemp(prefix="ipse-journey-bench-"))
    try:
        baseline = bare_turn(claude, top / "baseline")
        print(f"baseline: one bare `claude -p --bare` turn, no ipse: {baseline:.1f} s")
        times: list[float] = []
        failed = 0
        for n in range(1, options.runs + 1):
            started = time.monotonic()
            try:
                seams = journey(top / f"run-{n:02d}", claude).world.seams
                broken = seams.failures
            except Broken as exc:  # a seam the rest stands on broke
                broken = str(exc).splitlines()[1:]
            seconds = time.monotonic() - started
            times.append(seconds)
            failed += bool(broken)
            verdict = "pass" if not broken else f"FAIL ({len(broken)} seam(s))"
            print(f"run {n:2d}: {verdict:<18} {seconds:6.1f} s  ({seconds / baseline:.1f}x)")
            for line in broken:
                print(f"         - {line.strip(' -')[:200]}")
        median = statistics.median(times)
        print(
            f"{options.runs - failed}/{options.runs} passed; median {median:.1f} s per journey, "
            f"{median / baseline:.1f}x the bare turn (min {min(times):.1f}, max {max(times):.1f})"
        )
        return 1 if failed else 0
    finally:
        if options.keep:
            print(f"folders kept in {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
