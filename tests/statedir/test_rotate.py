"""rotate: a new log carrying what verification needs; the old one kept beside it."""

from __future__ import annotations

import json
from pathlib import Path

from ipse.statedir import add_invariant, resume, rotate, set_next, stamp, verify_state
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json, wal_records


def _fill(state: Path) -> Path:
    add_invariant(state, "No regex lexer", "too slow")
    set_next(state, "Write the tokenizer")
    artifact = state.parent / "out.log"
    artifact.write_text("ok\n")
    stamp(state, "tests pass", [artifact], use_git=True)
    return artifact


def test_rotate_starts_a_new_log_and_keeps_the_old(state: Path, run_ipse: RunIpse) -> None:
    _fill(state)
    old = (state / ".wal").read_bytes()
    done = run_ipse("state", "rotate", "--json", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    data = as_json(done)
    assert data["previous"] == ".wal.0001"
    assert (state / ".wal.0001").read_bytes() == old
    (first,) = wal_records(state)
    assert first["kind"] == "rotate" and first["seq"] == 1
    assert first["next_text"] == "Write the tokenizer"
    assert first["previous"]["lines"] == 4
    assert verify_state(state).ok
    assert resume(state).next_step.text == "Write the tokenizer"
    set_next(state, "Write the parser")
    run_ipse("state", "rotate", cwd=state.parent)
    assert (state / ".wal.0002").is_file()
    assert verify_state(state).ok
    assert resume(state).next_step.text == "Write the parser"


def test_after_rotation_verify_still_catches_everything(state: Path) -> None:
    artifact = _fill(state)
    rotate(state)
    inv = state / "10_invariants.md"
    inv.write_text(inv.read_text().replace("too slow", "fast"))
    artifact.write_text("changed\n")
    (state / "00_goal.md").write_text("# Goal\n\nsomething else\n")
    violations = verify_state(state).violations
    assert any("00_goal.md changed" in v for v in violations)
    assert any("invariant 'No regex lexer'" in v for v in violations)
    assert any("out.log changed" in v for v in violations)


def test_a_receipt_from_before_the_rotation_is_still_vouched_for(state: Path) -> None:
    _fill(state)
    rotate(state)
    path = state / ".receipts.jsonl"
    line = json.loads(path.read_text())
    line["claim"] = "everything passes"
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    violations = verify_state(state).violations
    assert len(violations) == 1 and "edited after stamping" in violations[0]


def test_a_rotated_log_changed_afterwards_is_caught(state: Path) -> None:
    _fill(state)
    rotate(state)
    with open(state / ".wal.0001", "ab") as handle:
        handle.write(b"{}\n")
    violations = verify_state(state).violations
    assert violations == ["the rotated WAL .wal.0001 changed after the rotation"]
    (state / ".wal.0001").unlink()
    report = verify_state(state)
    assert report.ok and any("is gone" in w for w in report.warnings)
