"""A real agent CLI's long session through ``ipse proxy --autopilot cut`` (the journey of
tests/proxy/test_autopilot_claude_code.py and test_autopilot_codex.py) run N times in a row:
prints how many runs passed (the CLI never compacted, the proxy cut, the prefix held between
cuts, every authored word reached the last request; `tests.support.autopilot_journey`), what
broke in the others, and the median time of a journey against a baseline measured in the same
run: the same turns straight to the same kind of scripted upstream without ipse, where the CLI
compacts on its own (its compaction request is counted).

Loopback only: the scripted upstream and the proxy (a process on a free port of 127.0.0.1).
Each run has its own fresh folder under a temporary directory, removed afterwards (``--keep``
keeps them). Exit status 1 when any run failed.

    python bench/autopilot_journey.py [--agent claude-code|codex] [--runs 10] [--turns 14]
                                      [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.journey import client_binary  # noqa: E402
from tests.support.autopilot_journey import AGENTS, run_journey  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agent", choices=sorted(AGENTS), default="claude-code")
    parser.add_argument("--runs", type=int, default=10, help="journeys in a row (default 10)")
    parser.add_argument("--turns", type=int, default=14, help="turns a journey (default 14)")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder")
    options = parser.parse_args()
    agent = AGENTS[options.agent]
    cli = client_binary(options.agent)
    top = Path(tempfile.mkdtemp(prefix="ipse-autopilot-bench-"))
    try:
        baseline = run_journey(agent, cli, top / "baseline", options.turns, proxy=False)
        if baseline.problems:
            print(f"the baseline failed: {baseline.problems}")
            return 1
        print(
            f"baseline: {options.turns} {options.agent} turns without ipse: "
            f"{baseline.seconds:.1f} s, {baseline.compactions} compaction request(s)"
        )
        times: list[float] = []
        failed = 0
        for n in range(1, options.runs + 1):
            journey = run_journey(agent, cli, top / f"run-{n:02d}", options.turns)
            times.append(journey.seconds)
            failed += bool(journey.problems)
            verdict = "pass" if not journey.problems else "FAIL"
            print(
                f"run {n:2d}: {verdict:<5} {journey.seconds:6.1f} s "
                f"({journey.seconds / baseline.seconds:.2f}x)  {journey.cuts} cut(s), "
                f"{journey.compactions} compaction(s)"
            )
            for problem in journey.problems:
                print(f"         - {problem[:300]}")
        median = statistics.median(times)
        print(
            f"{options.runs - failed}/{options.runs} passed; median {median:.1f} s per journey "
            f"of {options.turns} turns, {median / baseline.seconds:.2f}x the baseline "
            f"(min {min(times):.1f}, max {max(times):.1f})"
        )
        return 1 if failed else 0
    finally:
        if options.keep:
            print(f"folders kept in {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
