"""init, invariant, next and checkpoint, through the library and the real CLI."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ipse.errors import InputError, UsageError
from ipse.statedir import add_invariant, init, log_transition, set_next
from ipse.statedir._ops import NO_NEXT
from tests.statedir.conftest import RunIpse
from tests.statedir.util import git, wal_records


def test_init_creates_the_files_in_reading_order(repo: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "init", "--goal", "Port the parser", "--done", "tests pass", cwd=repo)
    assert done.returncode == 0, done.stderr
    folder = repo / "state"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".lock")) == [
        ".wal",
        "00_goal.md",
        "10_invariants.md",
        "99_next.md",
    ]
    goal = (folder / "00_goal.md").read_bytes()
    assert b"Port the parser" in goal and b"tests pass" in goal
    (first,) = wal_records(folder)
    assert first["kind"] == "init"
    assert first["goal_sha256"] == hashlib.sha256(goal).hexdigest()
    assert first["rev"] == git(repo, "rev-parse", "--short=7", "HEAD")
    assert (folder / "99_next.md").read_text().strip() == NO_NEXT
    assert (folder / "00_goal.md").stat().st_mode & 0o777 == 0o600  # the session's own words


def test_a_second_init_is_refused(state: Path, run_ipse: RunIpse) -> None:
    before = (state / "00_goal.md").read_bytes()
    done = run_ipse("state", "init", "--goal", "Something else", cwd=state.parent)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "written once" in done.stderr
    assert (state / "00_goal.md").read_bytes() == before
    with pytest.raises(UsageError):
        init(state, "again")


def test_invariants_are_appended_with_their_reason(state: Path, run_ipse: RunIpse) -> None:
    before = (state / "10_invariants.md").read_bytes()
    done = run_ipse(
        "state", "invariant", "No regex lexer", "--reason", "too slow", cwd=state.parent
    )
    assert done.returncode == 0, done.stderr
    add_invariant(state, "Keep the AST immutable\nacross passes", "passes ran in parallel")
    after = (state / "10_invariants.md").read_bytes()
    assert after.startswith(before)
    text = after[len(before) :].decode()
    assert text == (
        "- No regex lexer\n  Reason: too slow\n"
        "- Keep the AST immutable\n  across passes\n  Reason: passes ran in parallel\n"
    )
    last = wal_records(state)[-1]
    assert last["kind"] == "invariant" and last["length"] == len(after)
    assert last["sha256"] == hashlib.sha256(after).hexdigest()


def test_next_logs_first_then_replaces_the_file(state: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "next", "Write the tokenizer", "--json", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    data = (state / "99_next.md").read_bytes()
    assert data == b"Write the tokenizer\n"
    last = wal_records(state)[-1]
    assert last["kind"] == "next" and last["text"] == "Write the tokenizer"
    assert last["sha256"] == hashlib.sha256(data).hexdigest()
    assert last["rev"] == git(state.parent, "rev-parse", "--short=7", "HEAD")
    assert set(last) >= {"t", "rev", "text", "sha256", "seq", "prev"}
    assert last["t"].endswith("Z")


def test_next_records_no_git_outside_a_repository(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    init(folder, "goal")
    record = set_next(folder, "step")
    assert record.data["rev"] == "no-git"


def test_the_revision_follows_new_commits_and_packed_refs(state: Path) -> None:
    repo = state.parent
    (repo / "x.txt").write_text("x\n")
    git(repo, "add", "x.txt")
    git(repo, "commit", "-q", "-m", "second")
    assert set_next(state, "a").data["rev"] == git(repo, "rev-parse", "--short=7", "HEAD")
    git(repo, "pack-refs", "--all")
    assert set_next(state, "b").data["rev"] == git(repo, "rev-parse", "--short=7", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert set_next(state, "c").data["rev"] == git(repo, "rev-parse", "--short=7", "HEAD")


def test_checkpoint_is_one_wal_line(state: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "checkpoint", "tokenizer done", cwd=state.parent)
    assert done.returncode == 0
    log_transition(state, "second")
    assert [r["text"] for r in wal_records(state)[-2:]] == ["tokenizer done", "second"]


@pytest.mark.parametrize(
    "args",
    [
        ("state", "next", "   "),
        ("state", "invariant", "x", "--reason", ""),
        ("state", "checkpoint", ""),
        ("state", "next", "x", "--dir", "missing"),
        ("state", "resume", "--dir", "missing"),
        ("state", "verify", "--dir", "missing"),
        ("state", "resume", "--budget", "0"),
        ("state", "install", "--agent", "vim"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    state: Path, run_ipse: RunIpse, args: tuple[str, ...]
) -> None:
    before = {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()}
    done = run_ipse(*args, cwd=state.parent)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()} == before


def test_a_folder_without_a_log_is_not_a_state_folder(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    with pytest.raises(InputError, match=r"no \.wal"):
        set_next(tmp_path / "state", "x")
