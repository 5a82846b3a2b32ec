"""A small fleet on PostgreSQL: worker processes SIGKILLed while they write, and restarted.

Runs ``bench/fleet.py`` (200 twins, 4 worker processes, 2 passes, 3 kills) against the test's
own schema, then checks the store itself, apart from the script's own verdict: every twin's
history is one unbroken chain (no fork, no gap), and every write a worker acknowledged (its
log, fsynced before counting) is in the store with the hash it was acknowledged with.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

from ipse.twin import open_store

FLEET = Path(__file__).resolve().parents[2] / "bench" / "fleet.py"
TWINS, WORKERS, WRITES, KILLS = 200, 4, 2, 3


def test_fleet_under_kills_has_no_fork_and_loses_no_acknowledged_write(
    pg_url: str, tmp_path: Path
) -> None:
    cmd = [sys.executable, str(FLEET), "--url", pg_url, "--logs", str(tmp_path), "--json"]
    cmd += ["--twins", str(TWINS), "--workers", str(WORKERS), "--writes", str(WRITES)]
    cmd += ["--kills", str(KILLS), "--kill-every", "0.05", "--ttl", "1", "--seconds", "150"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=200, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["kills"] >= 1
    assert result["timed_out"] is False
    assert result["forks"] == result["lost"] == result["lease_gave_up"] == 0

    acked: list[tuple[str, int, str]] = []
    for log in tmp_path.glob("acks-*.log"):
        for line in log.read_text().split("\n")[:-1]:
            twin, version, state_hash, *_ = line.split("\t")
            acked.append((twin, int(version), state_hash))
    assert len(acked) >= TWINS * WRITES

    with open_store(pg_url) as store:
        assert store.twins() == [f"twin-{i:05d}" for i in range(TWINS)]
        stored: dict[tuple[str, int], str] = {}
        for twin in store.twins():
            history = store.history(twin)
            assert [s.version for s in history] == list(range(1, len(history) + 1))
            for before, after in itertools.pairwise(history):
                assert after.state.commitments[:-1] == before.state.commitments
                assert len(after.state.commitments) == len(before.state.commitments) + 1
            stored.update({(twin, s.version): s.state_hash for s in history})
    missing = [a for a in acked if stored.get(a[:2]) != a[2]]
    assert missing == []
