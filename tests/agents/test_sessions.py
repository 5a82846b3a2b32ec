"""Each agent CLI's session folder, where it writes the sessions run in a folder, and the file of
one session found there (the MCP server looks for its session that way, asking each agent CLI
in the table in turn). Laid out as each agent CLI writes them: Claude Code's
``<config>/projects/<folder>/<id>.jsonl``, Codex's ``<CODEX_HOME>/sessions/Y/M/D/rollout-<time>-
<id>.jsonl``, Gemini CLI's ``<gemini dir>/tmp/<name>/chats`` (the name from ``projects.json``;
tests/journey/test_gemini_journey.py finds the real CLI's session there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.agents._install import agents_with_sessions, session_folder
from ipse.agents._table import agent_named

SESSION = "0198c1aa-0000-7000-8000-00000000abcd"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "my project"
    folder.mkdir()
    return folder


def test_claude_code_sessions(project: Path) -> None:
    folder = session_folder("claude-code", project)
    assert folder is not None and folder.parent.name == "projects"
    assert agent_named("claude-code").session_file(SESSION, project) is None
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text("{}\n")
    assert agent_named("claude-code").session_file(SESSION, project) == folder / f"{SESSION}.jsonl"


def test_codex_sessions(project: Path) -> None:
    folder = session_folder("codex", project)
    assert folder == project.parent / "home" / ".codex" / "sessions"
    rollout = folder / "2026" / "12" / "05" / f"rollout-2026-12-05T01-00-00-{SESSION}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    assert agent_named("codex").session_file(SESSION, project) == rollout


def test_gemini_sessions(project: Path) -> None:
    assert session_folder("gemini", project) is None  # Gemini CLI has not run here yet
    projects = project.parent / "home" / ".gemini" / "projects.json"
    projects.parent.mkdir(parents=True)
    projects.write_text(json.dumps({"projects": {str(project.resolve()): "my-project"}}))
    folder = session_folder("gemini", project)
    assert folder == projects.parent / "tmp" / "my-project" / "chats"


def test_the_mcp_server_asks_every_agent_cli_with_session_files() -> None:
    formats = [a.session_format for a in agents_with_sessions()]
    assert formats == ["claude-code", "codex", "gemini-cli"]
