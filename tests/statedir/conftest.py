"""Shared fixtures: real git repositories in temporary folders and the real ``ipse`` CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ipse.statedir import init
from tests.statedir.util import make_repo

RunIpse = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def state(repo: Path) -> Path:
    """An initialised state folder inside ``repo``."""
    folder = repo / "state"
    init(folder, "Port the parser", "all parser tests pass")
    return folder


@pytest.fixture
def run_ipse() -> RunIpse:
    """Run the real CLI in a subprocess: ``run_ipse(*args, cwd=..., input=...)``."""

    def run(
        *args: str, cwd: Path, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "IPSE_STATE_DIR"}
        return subprocess.run(
            [sys.executable, "-m", "ipse.cli.main", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=timeout,  # a command that hangs fails the test instead of stalling it
        )

    return run
