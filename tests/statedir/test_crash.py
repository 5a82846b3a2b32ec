"""Faults in ``next``: SIGKILL at random moments, and concurrent writers from many processes.

A killed ``next`` must leave ``resume`` giving either the old or the new next step, never a
mix; concurrent ``next`` calls are serialised by the folder lock and none is lost.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from ipse.statedir import _wal as wal
from ipse.statedir import resume, verify_state
from ipse.statedir._ops import NO_NEXT, next_document
from tests.statedir.conftest import RunIpse

CHILD = """
import sys
from pathlib import Path
from ipse.statedir import set_next
folder, start = Path(sys.argv[1]), int(sys.argv[2])
sys.stdout.write("ready\\n")
sys.stdout.flush()
k = start
while True:
    set_next(folder, "step %08d " % k + chr(97 + k % 26) * 30000)
    k += 1
"""


def _text(k: int) -> str:
    return f"step {k:08d} " + chr(97 + k % 26) * 30000


def _is_whole_step(text: str) -> bool:
    if text == NO_NEXT:
        return True
    return text == _text(int(text.split()[1]))


def test_sigkill_during_next_leaves_the_old_or_the_new_step(state: Path) -> None:
    rng = random.Random(1234)
    outcomes = {"file": 0, "wal": 0}
    logged = {NO_NEXT}
    for iteration in range(60):
        before = resume(state).next_step.text
        start = iteration * 1_000_000
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(state), str(start)], stdout=subprocess.PIPE
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        subprocess.run(["sleep", f"{rng.uniform(0, 0.04):.4f}"], check=True)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()

        records = [r for r in wal.read_all(state / ".wal").records if r.next_step()]
        logged.update(r.text for r in records)
        newest = records[-1].text
        view = resume(state)
        # resume gives the newest step whose WAL line landed, whole: the step in effect
        # before the kill (old) or one this child set (new), never a mix of the two
        assert view.next_step.text == newest
        assert _is_whole_step(newest)
        assert newest == before or int(newest.split()[1]) >= start
        # the file on disk is always one whole step document, never a torn one
        data = (state / "99_next.md").read_bytes()
        assert data in {next_document(text) for text in logged}
        assert view.next_step.source == ("file" if data == next_document(newest) else "wal")
        outcomes[view.next_step.source] += 1
    # the folder keeps working after all the kills: one more next makes it consistent again
    from ipse.statedir import set_next

    set_next(state, "after the storm")
    report = verify_state(state)
    assert not [v for v in report.violations if "99_next.md" in v]
    assert resume(state).next_step.text == "after the storm"
    print("outcomes", outcomes)
    assert sum(outcomes.values()) == 60


WRITER = """
import sys
from pathlib import Path
from ipse.statedir import set_next
folder, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(count):
    set_next(folder, "%s-%03d" % (name, i))
"""


def test_concurrent_next_calls_are_serialised_and_none_is_lost(
    state: Path, run_ipse: RunIpse
) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(state), f"w{n}", "20"])
        for n in range(6)
    ]
    cli = [
        subprocess.Popen(
            [sys.executable, "-m", "ipse.cli.main", "state", "next", f"cli-{n}"],
            cwd=state.parent,
            stdout=subprocess.DEVNULL,
        )
        for n in range(4)
    ]
    for proc in writers + cli:
        assert proc.wait() == 0
    scan = wal.read_all(state / ".wal")
    assert scan.bad == []
    texts = [r.text for r in scan.records if r.kind == "next"]
    expected = {f"w{n}-{i:03d}" for n in range(6) for i in range(20)} | {
        f"cli-{n}" for n in range(4)
    }
    assert sorted(texts) == sorted(expected)  # every call logged exactly once
    for n in range(6):  # each writer's own calls stay in its order
        mine = [t for t in texts if t.startswith(f"w{n}-")]
        assert mine == sorted(mine)
    assert [r.seq for r in scan.records] == list(range(1, len(scan.records) + 1))
    assert (state / "99_next.md").read_bytes() == next_document(texts[-1])
    assert verify_state(state).ok
