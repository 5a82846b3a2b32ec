"""Test helpers: real git repositories, the WAL's records, JSON output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import CliResult


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    (path / "README.md").write_text("project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    return path


def wal_records(folder: Path) -> list[dict[str, Any]]:
    """The valid records of the folder's WAL, forward."""
    from ipse.statedir import _wal as wal

    return [r.data for r in wal.read_all(folder / ".wal").records]


def as_json(done: CliResult | subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)
