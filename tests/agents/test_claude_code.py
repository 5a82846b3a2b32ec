"""Claude Code's own rules for where its files live and how private they are: with
``CLAUDE_CONFIG_DIR`` set, ``--user`` puts the server in ``$CLAUDE_CONFIG_DIR/.claude.json`` (where
the real ``claude mcp list`` finds it) beside CLAUDE.md and settings.json; ``.claude.json`` is
created 0600, as Claude Code creates it; an existing file keeps its mode."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.support.clients import claude_binary


def test_user_install_follows_claude_config_dir(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path
) -> None:
    pytest.importorskip("uvicorn")  # --proxy needs the proxy extra (the server needs none)
    home, config_dir, project = tmp_path / "home", tmp_path / "cc-config", tmp_path / "project"
    for folder in (home, config_dir, project):
        folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    done = cli("install", "--agent", "claude-code", "--user", "--proxy", cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in config_dir.iterdir()) == [
        ".claude.json",
        "CLAUDE.md",
        "settings.json",
    ]
    assert list(home.iterdir()) == []  # nothing split off into the home folder
    user_config = config_dir / ".claude.json"
    entry = json.loads(user_config.read_text())["mcpServers"]["ipse"]
    assert entry["env"] == {"IPSE_HOME": str(_isolated_home)}
    assert entry["alwaysLoad"] is True  # Claude Code waits for the tools before turn one
    assert stat.S_IMODE(user_config.stat().st_mode) == 0o600
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "PATH": "/usr/bin:/bin",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    listed = subprocess.run(
        [claude_binary(), "mcp", "list"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert listed.returncode == 0, listed.stderr
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("ipse:")), "")
    assert "Connected" in line, listed.stdout
    # uninstall finds everything in the same place, and leaves only what Claude Code wrote
    before_uninstall = {p.name for p in config_dir.iterdir()}
    assert cli("uninstall", "--agent", "claude-code", "--user", cwd=project).returncode == 0
    left = {p.name for p in config_dir.iterdir()}
    assert "CLAUDE.md" not in left and "settings.json" not in left, before_uninstall
    if (config_dir / ".claude.json").exists():  # Claude Code wrote its own state there too
        assert "ipse" not in json.loads((config_dir / ".claude.json").read_text()).get(
            "mcpServers", {}
        )


def test_an_existing_user_config_keeps_its_mode(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    user_config = tmp_path / ".claude.json"
    user_config.write_text('{"numStartups": 3}\n')
    user_config.chmod(0o640)
    assert cli("install", "--agent", "claude-code", "--user", cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(user_config.stat().st_mode) == 0o640
    assert cli("uninstall", "--agent", "claude-code", "--user", cwd=tmp_path).returncode == 0
    assert user_config.read_text() == '{"numStartups": 3}\n'
    assert stat.S_IMODE(user_config.stat().st_mode) == 0o640
    os.unlink(user_config)
    assert cli("install", "--agent", "claude-code", "--user", cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(user_config.stat().st_mode) == 0o600


@pytest.mark.parametrize("flag", [[], ["--proxy"]])
def test_uninstall_takes_proxy_and_removes_the_proxy_settings_either_way(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    project = tmp_path / "project"
    project.mkdir()
    assert cli("install", "--agent", "claude-code", "--proxy", cwd=project).returncode == 0
    done = cli("uninstall", "--agent", "claude-code", *flag, cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in project.iterdir()) == []
