"""A hostile repository's state folder: links, FIFOs and devices are refused, by name.

A state file linked to a secret must not reach the agent's context through the session-start
hook, an invariants file linked to ``~/.bashrc`` must not be appended to, and a FIFO where a
state file belongs must not hang any command.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipse.errors import InputError
from ipse.statedir import add_invariant, resume, set_next, verify_state
from tests.statedir.conftest import RunIpse

SECRET = "AWS_SECRET_ACCESS_KEY=do-not-leak-me"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.env"
    path.write_text(SECRET + "\n")
    return path


def test_a_state_file_linked_to_a_secret_is_not_printed_by_the_hook(
    state: Path, secret: Path, run_ipse: RunIpse
) -> None:
    (state / "50_x.md").symlink_to(secret)
    done = run_ipse("state", "resume", "--hook", "claude-code", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    assert "50_x.md is a symbolic link" in done.stdout
    view = resume(state)
    assert all(SECRET not in s.body for s in view.sections)


def test_an_invariants_file_linked_elsewhere_is_not_appended_to(
    state: Path, tmp_path: Path, run_ipse: RunIpse
) -> None:
    bashrc = tmp_path / "bashrc"
    bashrc.write_text("export PATH=/usr/bin\n")
    (state / "10_invariants.md").unlink()
    (state / "10_invariants.md").symlink_to(bashrc)
    with pytest.raises(InputError, match=r"10_invariants\.md: a symbolic link"):
        add_invariant(state, "rm -rf /", reason="hostile")
    done = run_ipse("state", "invariant", "x", "--reason", "y", cwd=state.parent)
    assert done.returncode == 2
    assert "10_invariants.md: a symbolic link" in done.stderr
    assert bashrc.read_text() == "export PATH=/usr/bin\n"
    report = verify_state(state)
    assert any("10_invariants.md is a symbolic link" in v for v in report.violations)


def test_a_next_file_linked_elsewhere_is_neither_read_nor_replaced(
    state: Path, secret: Path
) -> None:
    (state / "99_next.md").unlink()
    (state / "99_next.md").symlink_to(secret)
    view = resume(state)
    assert SECRET not in view.text()
    with pytest.raises(InputError, match=r"99_next\.md: a symbolic link"):
        set_next(state, "go on")
    assert secret.read_text() == SECRET + "\n"
    assert (state / "99_next.md").is_symlink()


def test_a_linked_wal_is_refused(state: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.wal"
    os.replace(state / ".wal", real)
    (state / ".wal").symlink_to(real)
    with pytest.raises(InputError, match=r"\.wal: a symbolic link"):
        set_next(state, "go on")
    assert any(".wal is a symbolic link" in v for v in verify_state(state).violations)


@pytest.mark.parametrize("name", ["99_next.md", "10_invariants.md", "50_notes.md"])
def test_a_fifo_hangs_no_command(state: Path, run_ipse: RunIpse, name: str) -> None:
    path = state / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for args in (
        ("state", "resume"),
        ("state", "resume", "--hook", "claude-code"),
        ("state", "verify"),
        ("state", "next", "go on"),
        ("state", "invariant", "x", "--reason", "y"),
    ):
        done = run_ipse(*args, cwd=state.parent)  # a hang here is the bug (pytest times out)
        assert done.returncode in (0, 1, 2), (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert "a FIFO" in run_ipse("state", "verify", cwd=state.parent).stdout


def test_a_folder_named_like_a_state_file_is_reported(state: Path) -> None:
    (state / "50_notes.md").mkdir()
    assert "50_notes.md is a folder" in resume(state).text()
    assert any("50_notes.md: a folder" in v for v in verify_state(state).violations)
