"""Shared fixtures: real git repositories in temporary folders and the ``ipse`` CLI (in process)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ipse.statedir import init
from tests.conftest import CliResult, run_cli
from tests.statedir.util import make_repo

RunIpse = Callable[..., CliResult]


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
    """Run the CLI in process, in ``cwd``: ``run_ipse(*args, cwd=..., input=...)``."""

    def run(*args: str, cwd: Path, input: str | None = None) -> CliResult:
        return run_cli(*args, cwd=cwd, input=input, env={"IPSE_STATE_DIR": None})

    return run
