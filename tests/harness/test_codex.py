"""The real Codex CLI reads what ``ipse install --agent codex --proxy`` wrote: the MCP server
entry (``codex mcp get ipse``) in a config that also selects ipse's model provider."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ipse.harness import launcher
from tests.conftest import CliRun

CACHED = Path.home() / ".cache" / "ipse-test" / "codex" / "node_modules" / ".bin" / "codex"


def codex_binary() -> str:
    """The Codex CLI: ``IPSE_CODEX_BIN``, the test cache ``.ci/run`` fills, or PATH."""
    for candidate in (os.environ.get("IPSE_CODEX_BIN"), str(CACHED), shutil.which("codex")):
        if candidate and Path(candidate).exists():
            return candidate
    if os.environ.get("IPSE_REQUIRE_CLIENTS"):
        pytest.fail("the Codex CLI is missing (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip("the Codex CLI is not installed (npm i @openai/codex)")


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
