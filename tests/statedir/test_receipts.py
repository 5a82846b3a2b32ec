"""Receipts: claims bound to artifacts and git HEAD; tampering, forgery, rewritten history."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ipse.errors import InputError, UsageError
from ipse.statedir import _seal as seal
from ipse.statedir import _wal as wal
from ipse.statedir import stamp, verify_state
from ipse.statedir._receipts import receipt_id
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json, git, wal_records


@pytest.fixture
def artifact(state: Path) -> Path:
    path = state.parent / "out.log"
    path.write_text("142 passed\n")
    git(state.parent, "add", "out.log")
    git(state.parent, "commit", "-q", "-m", "test log")
    return path


def test_stamp_binds_the_claim_to_hashes_and_head(
    state: Path, artifact: Path, run_ipse: RunIpse
) -> None:
    done = run_ipse(
        "state",
        "stamp",
        "all tests pass",
        "--artifact",
        "out.log",
        "--git",
        "--json",
        cwd=state.parent,
    )
    assert done.returncode == 0, done.stderr
    receipt = as_json(done)
    digest = hashlib.sha256(b"142 passed\n").hexdigest()
    assert receipt["artifacts"] == [{"path": "out.log", "sha256": digest, "bytes": 11}]
    assert receipt["git"] == {"head": git(state.parent, "rev-parse", "HEAD"), "dirty": True}
    assert receipt["id"] == receipt_id(receipt)
    assert wal_records(state)[-1]["receipt"] == receipt["id"]
    assert verify_state(state).ok


def test_a_clean_tree_is_recorded_as_clean(state: Path, artifact: Path) -> None:
    git(state.parent, "add", "-A")
    git(state.parent, "commit", "-q", "-m", "state")
    receipt = stamp(state, "clean", [artifact], use_git=True)
    assert receipt["git"]["dirty"] is False


def test_a_changed_artifact_is_caught(state: Path, artifact: Path) -> None:
    stamp(state, "all tests pass", [artifact])
    artifact.write_text("141 passed, 1 failed\n")
    report = verify_state(state)
    assert len(report.violations) == 1
    assert "artifact out.log changed since the claim" in report.violations[0]


def test_a_deleted_artifact_is_caught(state: Path, artifact: Path) -> None:
    stamp(state, "all tests pass", [artifact])
    artifact.unlink()
    assert any("out.log is missing" in v for v in verify_state(state).violations)


def test_a_receipt_written_by_hand_is_caught(state: Path, artifact: Path) -> None:
    real = stamp(state, "all tests pass", [artifact])
    forged = {k: v for k, v in real.items() if k != "id"}
    forged["claim"] = "the release is signed off"
    forged["id"] = receipt_id(forged)
    with open(state / ".receipts.jsonl", "a") as handle:
        handle.write(json.dumps(forged) + "\n")
    report = verify_state(state)
    assert len(report.violations) == 1
    assert "not recorded in the WAL" in report.violations[0]


def test_an_edited_receipt_is_caught(state: Path, artifact: Path) -> None:
    stamp(state, "all tests pass", [artifact])
    path = state / ".receipts.jsonl"
    path.write_text(path.read_text().replace("all tests pass", "all tests and lints pass"))
    report = verify_state(state)
    assert any("edited after stamping" in v for v in report.violations)
    assert any("missing from .receipts.jsonl" in v for v in report.violations)


def test_a_rewritten_history_is_caught(state: Path, artifact: Path) -> None:
    stamp(state, "all tests pass", [artifact], use_git=True)
    git(state.parent, "commit", "-q", "--amend", "-m", "test log, reworded")
    report = verify_state(state)
    assert len(report.violations) == 1
    assert "is not an ancestor of HEAD (history rewritten)" in report.violations[0]


def test_head_moving_on_after_a_git_stamp_is_noted(state: Path, artifact: Path) -> None:
    receipt = stamp(state, "all tests pass", [artifact], use_git=True)
    assert verify_state(state).warnings == []
    for n in range(2):
        (state.parent / f"other{n}.txt").write_text(f"{n}\n")
        git(state.parent, "add", f"other{n}.txt")
        git(state.parent, "commit", "-q", "-m", f"other {n}")
    report = verify_state(state)
    assert report.ok  # receipts accumulate; an older one is not a violation
    notes = [w for w in report.warnings if "stamped at" in w]
    assert len(notes) == 1
    head = git(state.parent, "rev-parse", "HEAD")
    assert f"stamped at {receipt['git']['head'][:7]}; HEAD is now {head[:7]}" in notes[0]
    assert "2 commits later" in notes[0]


def test_a_forged_clean_tree_claim_is_caught(state: Path, artifact: Path) -> None:
    git(state.parent, "add", "-A")
    git(state.parent, "commit", "-q", "-m", "state")
    artifact.write_text("142 passed (edited, not committed)\n")
    receipt = stamp(state, "all tests pass", [artifact], use_git=True)
    assert receipt["git"]["dirty"] is True
    # forge: claim the tree was clean, re-address the receipt, and log it like stamp would
    path = state / ".receipts.jsonl"
    data = json.loads(path.read_text())
    data["git"]["dirty"] = False
    data["id"] = receipt_id(data)
    path.write_text(json.dumps(data) + "\n")
    lines = (state / ".wal").read_bytes().splitlines()
    record = wal.decode(lines[-1])  # the stamp line is the last: re-address it, re-checksum it
    assert record is not None and record["receipt"] == receipt["id"]
    record["receipt"] = data["id"]
    # a forger holding ipse's key and home: sign the line and move the anchor too
    lines[-1] = wal.encode(record, seal.key())
    wal.anchor(state / ".wal", wal.Record(record, lines[-1]))
    (state / ".wal").write_bytes(b"\n".join(lines) + b"\n")
    violations = verify_state(state).violations
    assert len(violations) == 1, violations
    assert "forged claim" in violations[0]


def test_stamp_rejects_bad_input(state: Path, run_ipse: RunIpse) -> None:
    with pytest.raises(InputError, match="no such file"):
        stamp(state, "x", [state.parent / "nope"])
    with pytest.raises(UsageError):
        stamp(state, "  ", [state / "00_goal.md"])
    done = run_ipse("state", "stamp", "claim", cwd=state.parent)
    assert done.returncode == 2  # --artifact is required
    before = (state / ".wal").read_bytes()
    done = run_ipse("state", "stamp", "claim", "--artifact", "nope", cwd=state.parent)
    assert done.returncode == 2 and "no such file" in done.stderr
    assert (state / ".wal").read_bytes() == before


def test_git_without_a_repository_is_refused(tmp_path: Path) -> None:
    from ipse.statedir import init

    folder = tmp_path / "state"
    init(folder, "goal")
    (tmp_path / "a").write_text("a")
    with pytest.raises(UsageError, match="not in a git repository"):
        stamp(folder, "claim", [tmp_path / "a"], use_git=True)
