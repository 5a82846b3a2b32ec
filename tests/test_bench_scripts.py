"""Every script in ``bench/`` still starts: its imports resolve against the library as it is now.

The benches are run by hand, so a renamed public function breaks one silently (a bench once
imported ``verify`` from ``ipse.statedir`` after it had become ``verify_state``). ``--help`` runs
each script's imports and argument parser, and nothing else.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_there_are_benches() -> None:
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_bench_script_starts(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
