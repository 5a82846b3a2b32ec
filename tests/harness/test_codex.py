"""The real Codex CLI reads what ``ipse install --agent codex --proxy`` wrote: the MCP server
entry (``codex mcp get ipse``) in a config that also selects ipse's model provider."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ipse.harness import launcher
from tests.conftest import CliRun
from tests.support.clients import codex_binary


def test_codex_reads_the_installed_server(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = codex_binary()
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    (codex_home).mkdir()
    (codex_home / "config.toml").write_text('model = "o4"\n\n[tui]\nnotifications = true\n')
    done = cli("install", "--agent", "codex", "--proxy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CODEX_HOME": str(codex_home)}
    got = subprocess.run(
        [codex, "mcp", "get", "ipse", "--json"], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    entry = json.loads(got.stdout)
    command, args = launcher()
    assert entry["enabled"] is True
    assert entry["transport"]["command"] == command
    assert entry["transport"]["args"] == [*args, "mcp"]
