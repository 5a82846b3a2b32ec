"""resume: reading order, the next step checked against the WAL, faults, budget, the hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ipse.statedir import _wal as wal
from ipse.statedir import add_invariant, resume, set_next
from ipse.statedir._ops import next_document, sha256_hex
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json


def _positions(text: str, *needles: str) -> list[int]:
    return [text.index(f"=== {n} ===") for n in needles]


def test_files_in_lexicographic_order_then_the_last_wal_entry(
    state: Path, run_ipse: RunIpse
) -> None:
    add_invariant(state, "No regex lexer", "too slow")
    set_next(state, "Write the tokenizer")
    (state / "50_notes.md").write_text("notes by hand\n")
    done = run_ipse("state", "resume", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    order = _positions(
        out, "00_goal.md", "10_invariants.md", "50_notes.md", "99_next.md", "last WAL entry"
    )
    assert order == sorted(order)
    assert "Port the parser" in out and "No regex lexer" in out and "notes by hand" in out
    assert out.rstrip().endswith("next: Write the tokenizer")


def test_files_that_are_not_state_files_are_ignored(state: Path) -> None:
    (state / "notes.txt").write_text("SECRET-TXT\n")
    (state / "1_bad.md").write_text("SECRET-ONE-DIGIT\n")
    (state / "sub").mkdir()
    (state / ".99_next.md.abc.tmp").write_text("SECRET-TEMP\n")
    text = resume(state).text()
    assert "SECRET" not in text


def test_a_missing_next_file_gives_the_wal_step(state: Path, run_ipse: RunIpse) -> None:
    set_next(state, "Write the tokenizer")
    (state / "99_next.md").unlink()
    done = run_ipse("state", "resume", "--json", cwd=state.parent)
    data = as_json(done)
    assert data["next"]["source"] == "wal"
    assert data["next"]["text"] == "Write the tokenizer"
    assert "missing" in data["next"]["note"]
    assert "Write the tokenizer" in data["text"]


def test_a_torn_next_file_gives_the_wal_step_and_says_so(state: Path, run_ipse: RunIpse) -> None:
    set_next(state, "Write the tokenizer for string literals")
    (state / "99_next.md").write_bytes(b"Write the tok")
    done = run_ipse("state", "resume", cwd=state.parent)
    assert "Write the tokenizer for string literals" in done.stdout
    assert "does not match its last WAL record" in done.stdout
    assert "does not match" in done.stderr  # also a warning line


def test_an_interrupted_next_gives_the_new_step(state: Path) -> None:
    set_next(state, "old step")
    # the WAL line of a `next` was written, the rename never happened
    with open(state / ".wal", "rb") as handle:
        assert handle.read()
    wal.append(
        state / ".wal",
        wal.new_body("next", "new step", "no-git", sha256=sha256_hex(next_document("new step"))),
    )
    view = resume(state)
    assert view.next_step.text == "new step" and view.next_step.source == "wal"


def test_corrupted_wal_lines_are_skipped_with_a_warning(state: Path, run_ipse: RunIpse) -> None:
    set_next(state, "Write the tokenizer")
    with open(state / ".wal", "ab") as handle:
        handle.write(b"this line is damaged\n")
        handle.write(b'{"c":"1","kind":"next","seq":9,"te')
    done = run_ipse("state", "resume", "--json", cwd=state.parent)
    assert done.returncode == 0
    data = as_json(done)
    assert data["next"] == {"text": "Write the tokenizer", "source": "file", "note": None}
    assert any("corrupted" in w for w in data["warnings"])
    assert any("torn" in w for w in data["warnings"])


def test_many_garbage_wal_lines_make_one_warning_with_the_count_and_the_first_line(
    state: Path, run_ipse: RunIpse
) -> None:
    set_next(state, "Write the tokenizer")
    before = (state / ".wal").read_bytes().count(b"\n")
    with open(state / ".wal", "ab") as handle:
        handle.write(b"garbage\n" * 100_000)
        handle.write(b'{"c":"1","kind":"next","seq":9,"te')
    done = run_ipse("state", "resume", cwd=state.parent)
    assert done.returncode == 0
    warnings = done.stderr.splitlines()
    assert warnings == [
        f"ipse: warning: skipped a torn (an interrupted write) WAL line (line {before + 100_001})",
        f"ipse: warning: skipped 100,000 corrupted WAL lines (the first at line {before + 1}; "
        "`ipse state verify` lists each)",
    ]
    assert done.stdout.count("corrupted") == 1  # the warnings section of the text too
    hook = run_ipse("state", "resume", "--hook", "claude-code", cwd=state.parent)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.count("WAL line") == 2


def test_a_wal_with_no_valid_line_still_resumes(state: Path, run_ipse: RunIpse) -> None:
    (state / ".wal").write_bytes(b"\x00\x01garbage\n")
    done = run_ipse("state", "resume", cwd=state.parent)
    assert done.returncode == 0
    assert "Port the parser" in done.stdout


def test_missing_goal_and_invariants_are_reported_not_fatal(state: Path) -> None:
    (state / "00_goal.md").unlink()
    (state / "10_invariants.md").unlink()
    view = resume(state)
    assert "00_goal.md is missing" in view.warnings
    assert "10_invariants.md is missing" in view.warnings


def test_resume_warns_when_the_wal_grows_long(state: Path) -> None:
    last = wal.tail(state / ".wal").last
    assert last is not None
    lines = []
    prev = wal.line_hash(last.raw)
    for seq in range(2, wal.LONG_WAL_LINES + 3):
        raw = wal.encode(
            {"kind": "checkpoint", "seq": seq, "prev": prev, "t": "", "rev": "", "text": "x"}
        )
        prev = wal.line_hash(raw)
        lines.append(raw)
    with open(state / ".wal", "ab") as handle:
        handle.write(b"\n".join(lines) + b"\n")
    assert any("ipse state rotate" in w for w in resume(state).warnings)


def test_budget_keeps_goal_and_invariants_first(state: Path, run_ipse: RunIpse) -> None:
    for i in range(60):
        add_invariant(state, f"Rejected approach number {i}", f"it failed in way {i}")
    set_next(state, "Write the tokenizer")
    full = run_ipse("state", "resume", cwd=state.parent).stdout
    done = run_ipse("state", "resume", "--budget", "400", "--json", cwd=state.parent)
    data = as_json(done)
    from ipse._tokens import default_counter

    assert default_counter().count(data["text"]) <= 400 < default_counter().count(full)
    assert "Port the parser" in data["text"]
    assert "Rejected approach number 59" in data["text"]
    assert "output kept within 400 tokens" in data["text"]
    assert "10_invariants.md" in data["trimmed"]


def test_the_claude_code_hook_output(state: Path, run_ipse: RunIpse) -> None:
    set_next(state, "Write the tokenizer")
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "compact"})
    done = run_ipse("state", "resume", "--hook", "claude-code", cwd=state.parent, input=payload)
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert list(data) == ["hookSpecificOutput"]
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = data["hookSpecificOutput"]["additionalContext"]
    assert "Port the parser" in context and "Write the tokenizer" in context


def test_the_hook_is_silent_without_a_state_folder(tmp_path: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "resume", "--hook", "claude-code", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    done = run_ipse("state", "checkpoint", "--hook", "claude-code", "compaction", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    assert not os.path.exists(tmp_path / "state")


def test_the_precompact_hook_logs_a_checkpoint(state: Path, run_ipse: RunIpse) -> None:
    payload = json.dumps({"hook_event_name": "PreCompact", "trigger": "auto"})
    done = run_ipse(
        "state",
        "checkpoint",
        "--hook",
        "claude-code",
        "context compaction",
        cwd=state.parent,
        input=payload,
    )
    assert done.returncode == 0, done.stderr
    last = wal.tail(state / ".wal").last
    assert last is not None and last.text == "context compaction (PreCompact auto)"


def test_a_lost_wal_still_resumes_from_the_files(state: Path, run_ipse: RunIpse) -> None:
    set_next(state, "Write the tokenizer")
    (state / ".wal").unlink()
    done = run_ipse("state", "resume", "--hook", "claude-code", cwd=state.parent)
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Write the tokenizer" in context
    assert "no .wal in the state folder" in context
    assert run_ipse("state", "verify", cwd=state.parent).returncode == 1
