"""verify: the goal latch, append-only invariants, the next step, the log itself, stray files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.statedir import _seal as seal
from ipse.statedir import _wal as wal
from ipse.statedir import add_invariant, set_next, verify_state
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json


@pytest.fixture
def busy(state: Path) -> Path:
    add_invariant(state, "No regex lexer", "too slow on 1 MB inputs")
    add_invariant(state, "Do not mock the database", "mocks hid a migration bug")
    set_next(state, "Write the tokenizer")
    add_invariant(state, "Keep the AST immutable", "passes run in parallel")
    return state


def _only(folder: Path, needle: str) -> None:
    report = verify_state(folder)
    assert len(report.violations) == 1, report.violations
    assert needle in report.violations[0]


def test_a_clean_folder_verifies(busy: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "verify", "--json", cwd=busy.parent)
    assert done.returncode == 0, done.stdout
    assert as_json(done) == {"ok": True, "violations": [], "warnings": []}


def test_an_edited_goal_is_caught(busy: Path, run_ipse: RunIpse) -> None:
    goal = busy / "00_goal.md"
    goal.write_text(goal.read_text().replace("Port the parser", "Port half the parser"))
    done = run_ipse("state", "verify", cwd=busy.parent)
    assert done.returncode == 1
    assert "violation: 00_goal.md changed after init" in done.stdout
    assert done.stderr.startswith("ipse: error: 1 violation")


def test_a_rewritten_earlier_invariant_is_caught(busy: Path) -> None:
    path = busy / "10_invariants.md"
    path.write_text(path.read_text().replace("too slow on 1 MB", "fast enough on 1 MB"))
    _only(busy, "the text up to invariant 'No regex lexer' no longer matches")


def test_a_rewrite_of_the_newest_invariant_is_caught(busy: Path) -> None:
    path = busy / "10_invariants.md"
    path.write_text(path.read_text().replace("run in parallel", "run in sequence"))
    _only(busy, "invariant 'Keep the AST immutable'")


def test_a_removed_invariant_is_caught(busy: Path) -> None:
    path = busy / "10_invariants.md"
    text = path.read_text()
    path.write_text(text[: text.index("- Keep the AST")])
    _only(busy, "shorter than the WAL recorded")


def test_text_appended_by_hand_is_a_warning(busy: Path) -> None:
    with open(busy / "10_invariants.md", "a") as handle:
        handle.write("- added by hand\n")
    report = verify_state(busy)
    assert report.ok
    assert any("not added by `ipse state invariant`" in w for w in report.warnings)


def test_a_next_file_that_does_not_match_the_wal_is_caught(busy: Path) -> None:
    (busy / "99_next.md").write_text("Something nobody logged\n")
    _only(busy, "99_next.md does not match its last WAL record")


def test_missing_files_are_violations(busy: Path) -> None:
    (busy / "99_next.md").unlink()
    _only(busy, "99_next.md is missing")


def test_unexpected_files_are_warnings(busy: Path, run_ipse: RunIpse) -> None:
    (busy / "notes.txt").write_text("x")
    (busy / ".99_next.md.x1y2.tmp").write_text("x")
    (busy / "drafts").mkdir()
    done = run_ipse("state", "verify", cwd=busy.parent)
    assert done.returncode == 0
    assert "notes.txt: not a state file" in done.stdout
    assert "interrupted write" in done.stdout
    assert "drafts: a folder" in done.stdout


def test_a_deleted_wal_line_is_caught(busy: Path) -> None:
    lines = (busy / ".wal").read_bytes().splitlines(keepends=True)
    (busy / ".wal").write_bytes(b"".join(lines[:2] + lines[3:]))
    _only(busy, "records 3..3 are missing")


def test_a_wal_line_rewritten_with_a_fresh_checksum_breaks_the_chain(busy: Path) -> None:
    lines = (busy / ".wal").read_bytes().splitlines()
    data = wal.decode(lines[1])
    assert data is not None
    data["reason"] = "a different reason"
    lines[1] = wal.encode(data, seal.key())  # even signed with ipse's key
    (busy / ".wal").write_bytes(b"\n".join(lines) + b"\n")
    _only(busy, ".wal:3: does not chain to the line before")


def test_a_corrupted_wal_line_is_a_violation_and_a_torn_one_a_warning(busy: Path) -> None:
    raw = (busy / ".wal").read_bytes()
    (busy / ".wal").write_bytes(raw.replace(b"Write the tokenizer", b"Write the tokenizeR", 1))
    report = verify_state(busy)
    assert any("corrupted line" in v for v in report.violations)
    (busy / ".wal").write_bytes(raw + b'{"c":"00","kind":"next","te')
    report = verify_state(busy)
    assert report.ok, report.violations
    assert any("torn line" in w for w in report.warnings)


def test_a_wal_without_its_start_is_caught(busy: Path) -> None:
    lines = (busy / ".wal").read_bytes().splitlines(keepends=True)
    (busy / ".wal").write_bytes(b"".join(lines[1:]))
    report = verify_state(busy)
    assert any("does not start with its init" in v for v in report.violations)


def test_verify_json_lists_every_violation(busy: Path, run_ipse: RunIpse) -> None:
    (busy / "00_goal.md").write_text("# Goal\n\nanother goal\n")
    (busy / "99_next.md").write_text("x\n")
    done = run_ipse("state", "verify", "--json", cwd=busy.parent)
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["ok"] is False and len(data["violations"]) == 2


def test_a_run_of_garbage_lines_is_one_violation_with_its_range(busy: Path) -> None:
    before = (busy / ".wal").read_bytes().count(b"\n")
    with open(busy / ".wal", "ab") as handle:
        handle.write(b"garbage\n" * 100_000)
    report = verify_state(busy)
    garbage = [v for v in report.violations if "corrupted" in v]
    assert garbage == [
        f".wal:{before + 1}-{before + 100_000}: 100,000 corrupted lines (checksum or format)"
    ]
