"""Writers killed at the worst moment, and what the next command does about it.

Each child is a real process that runs the real write and is killed with SIGKILL at one
precise point (its own ``files.write_file`` or ``os.replace`` is wrapped to kill the process
there): after ``next``'s WAL line is durable but before ``99_next.md`` is renamed, between
``init``'s renames. The next command that takes the lock must finish the write, once, and
saying so; ``verify`` must never call the interrupted write a hand edit.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from ipse.statedir import resume, verify_state
from ipse.statedir._ops import next_document
from tests.statedir.conftest import RunIpse

KILL_AT_WRITE = """
import os, signal, sys
from pathlib import Path
from ipse.statedir import _files, init, set_next
folder, victim, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
real = _files.write_file
def dying(path, data):
    if path.name == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
_files.write_file = dying
if what == "next":
    set_next(folder, "the interrupted step")
else:
    init(folder, "Port the parser", "all parser tests pass")
"""

KILL_AT_RENAME = """
import os, signal, sys
from pathlib import Path
from ipse.statedir import set_next
real = os.replace
def dying(src, dst, **kw):
    if Path(dst).name == "99_next.md":
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst, **kw)
os.replace = dying
set_next(Path(sys.argv[1]), "the interrupted step")
"""


def _killed(script: str, *args: str) -> None:
    done = subprocess.run([sys.executable, "-c", script, *args], check=False)
    assert done.returncode == -signal.SIGKILL


def test_an_interrupted_next_is_finished_once_by_the_next_writer(
    state: Path, run_ipse: RunIpse
) -> None:
    before = (state / "99_next.md").read_bytes()
    _killed(KILL_AT_WRITE, str(state), "99_next.md", "next")
    assert (state / "99_next.md").read_bytes() == before  # the file is behind its log
    report = verify_state(state)
    assert report.ok, report.violations  # not reported as a hand edit
    assert any("interrupted `ipse state next`" in w for w in report.warnings)
    assert resume(state).next_step.text == "the interrupted step"
    done = run_ipse("state", "checkpoint", "carry on", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("finished the interrupted `ipse state next`") == 1
    assert (state / "99_next.md").read_bytes() == next_document("the interrupted step")
    again = run_ipse("state", "checkpoint", "and again", cwd=state.parent)
    assert "finished" not in again.stderr  # said once
    report = verify_state(state)
    assert report.ok and not report.warnings, report


def test_a_hand_edit_of_the_next_file_is_not_overwritten(state: Path, run_ipse: RunIpse) -> None:
    (state / "99_next.md").write_text("edited by hand\n")
    assert run_ipse("state", "checkpoint", "x", cwd=state.parent).returncode == 0
    assert (state / "99_next.md").read_text() == "edited by hand\n"
    assert any("99_next.md does not match" in v for v in verify_state(state).violations)


def test_stray_temporary_files_of_killed_writers_are_removed(
    state: Path, run_ipse: RunIpse
) -> None:
    _killed(KILL_AT_RENAME, str(state))
    assert (state / ".99_next.md.tmp").exists()
    done = run_ipse("state", "next", "after the kill", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    assert ".99_next.md.tmp" in done.stderr
    assert not (state / ".99_next.md.tmp").exists()
    report = verify_state(state)
    assert report.ok and not report.warnings, report


def test_an_init_killed_between_its_renames_is_finished(repo: Path, run_ipse: RunIpse) -> None:
    for victim in ("00_goal.md", "99_next.md", ".wal"):
        folder = repo / f"state-{victim.strip('.')}"
        _killed(KILL_AT_WRITE, str(folder), victim, "init")
        assert not (folder / ".wal").exists()
        args = ("--dir", folder.name)
        done = run_ipse(
            "state",
            "init",
            "--goal",
            "Port the parser",
            "--done",
            "all parser tests pass",
            *args,
            cwd=repo,
        )
        assert done.returncode == 0, (victim, done.stderr)
        report = verify_state(folder)
        assert report.ok and not report.warnings, (victim, report)
        assert run_ipse("state", "next", "go", *args, cwd=repo).returncode == 0


def test_other_commands_finish_an_interrupted_init(repo: Path, run_ipse: RunIpse) -> None:
    folder = repo / "state"
    _killed(KILL_AT_WRITE, str(folder), "99_next.md", "init")
    done = run_ipse("state", "next", "first step", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "finished the interrupted `ipse state init`" in done.stderr
    assert resume(folder).next_step.text == "first step"
    assert verify_state(folder).ok
    refused = run_ipse("state", "init", "--goal", "Another goal", cwd=repo)
    assert refused.returncode == 2 and "already exists" in refused.stderr


WRITER = """
import sys
from pathlib import Path
from ipse.statedir import add_invariant, set_next
folder, name = Path(sys.argv[1]), sys.argv[2]
for i in range(40):
    set_next(folder, "%s step %d " % (name, i) + "x" * 20000)
    add_invariant(folder, "%s rule %d" % (name, i), reason="because " * 200)
"""


def test_verify_sees_no_false_violation_while_writers_are_busy(state: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(state), f"w{n}"]) for n in range(3)
    ]
    reports = []
    while any(w.poll() is None for w in writers):
        reports.append(verify_state(state))
    for w in writers:
        assert w.wait() == 0
    reports.append(verify_state(state))
    bad = [r.violations for r in reports if not r.ok]
    assert bad == [], bad[:3]
    assert len(reports) > 1


def test_a_planted_init_intent_cannot_write_outside_the_state_files(
    repo: Path, run_ipse: RunIpse
) -> None:
    folder = repo / "state"
    folder.mkdir()
    intent = {"files": {"../escaped.txt": "owned\n"}, "wal": "{}"}
    (folder / ".init.pending").write_text(json.dumps(intent))
    done = run_ipse("state", "init", "--goal", "Port the parser", cwd=repo)
    assert done.returncode == 2
    assert "names files init never writes" in done.stderr
    assert not (repo / "escaped.txt").exists()
