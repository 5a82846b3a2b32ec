"""Shared test fixtures: where the real agent sessions live, and an isolated IPSE_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
CLAUDE_CODE = SHARED_DATA / "claude-code"
BIG_SESSION = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
OPENAI_TRAJ = SHARED_DATA / "openai-chat" / "deepseek-chat__django__django-13265.traj.json"
HTTP_LOG = SHARED_DATA / "anthropic-http" / "captured-2"


@pytest.fixture()
def shared_data() -> Path:
    """The folder of real sessions (read-only)."""
    assert SHARED_DATA.is_dir(), f"the shared data folder is missing: {SHARED_DATA}"
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own IPSE_HOME, so nothing touches the user's data."""
    home = tmp_path_factory.mktemp("ipse-home")
    monkeypatch.setenv("IPSE_HOME", str(home))
    return home
