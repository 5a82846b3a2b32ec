"""The real Codex CLI reads what ``ipse install --agent codex --proxy`` wrote: the MCP server
entry (``codex mcp get ipse``, with the ``IPSE_HOME`` install ran under) in a config that also
selects ipse's model provider; after Codex rewrote its config (``codex mcp add``, which drops
ipse's marker comments), uninstall still removes every entry of ipse's and reinstall works."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from ipse.agents import _tomledit as tomledit
from ipse.agents import install_agent
from ipse.agents._commands import launcher
from tests.conftest import CliRun
from tests.support.clients import codex_binary


def _codex(
    codex_home: Path, home: Path, *args: str, timeout: str = "120"
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CODEX_HOME": str(codex_home)}
    return subprocess.run(
        ["timeout", timeout, codex_binary(), *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_codex_reads_the_installed_server(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path
) -> None:
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    (codex_home).mkdir()
    (codex_home / "config.toml").write_text('model = "o4"\n\n[tui]\nnotifications = true\n')
    done = cli("install", "--agent", "codex", "--proxy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = _codex(codex_home, tmp_path, "mcp", "get", "ipse", "--json")
    assert got.returncode == 0, got.stderr
    entry = json.loads(got.stdout)
    command, args = launcher()
    assert entry["enabled"] is True
    assert entry["transport"]["command"] == command
    assert entry["transport"]["args"] == [*args, "mcp"]
    # the server files its notes in the home the proxy and the CLI use, and runs the ipse that
    # ran install (Codex passes a server no PYTHONPATH of its own)
    path = os.environ.get("PYTHONPATH")
    assert entry["transport"]["env"] == {
        "IPSE_HOME": str(_isolated_home),
        **({"PYTHONPATH": path} if path else {}),
    }
    # Codex passes a server only the variables it names: its home, to find a thread's rollout
    assert entry["transport"]["env_vars"] == ["CODEX_HOME"]
    # `codex exec` asks no questions: ipse's own tools are approved in its entry
    assert (
        tomledit.parse_toml((codex_home / "config.toml").read_text())["mcp_servers"]["ipse"][
            "default_tools_approval_mode"
        ]
        == "approve"
    )
    # Codex waits for a required server's tools before its first request
    assert tomledit.parse_toml((codex_home / "config.toml").read_text())["mcp_servers"]["ipse"][
        "required"
    ]


def test_install_says_what_to_run_and_which_key_codex_sends(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    done = cli("install", "--agent", "codex", "--proxy", "--port", "9123", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    start = next(n for n in notes if "proxy start --port 9123`" in n)
    assert "before running codex" in start and "Reconnecting" in start
    assert any("OPENAI_API_KEY (env_key)" in n for n in notes)
    config = tomledit.parse_toml((tmp_path / "codex-home" / "config.toml").read_text())
    assert config["model_providers"]["ipse"]["base_url"] == "http://127.0.0.1:9123/v1"


def test_a_config_codex_creates_private_is_created_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex writes config.toml 0600; ipse creating it does the same, and keeps a mode set."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    install_agent("codex", tmp_path)
    config = tmp_path / "codex-home" / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "AGENTS.md").stat().st_mode) & 0o077 != 0o077
    config.chmod(0o640)
    install_agent("codex", tmp_path, proxy=True)
    assert stat.S_IMODE(config.stat().st_mode) == 0o640


def test_after_codex_rewrote_its_config_uninstall_removes_all_of_ipse(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    config = codex_home / "config.toml"
    config.write_text('# mine\nmodel = "o4"  # keep\n\n[tui]\nnotifications = true\n')
    assert cli("install", "--agent", "codex", "--proxy", cwd=tmp_path).returncode == 0
    added = _codex(codex_home, tmp_path, "mcp", "add", "other", "--", "/bin/true")
    assert added.returncode == 0, added.stderr
    assert "# ipse:begin" not in config.read_text()  # Codex dropped ipse's marker
    done = cli("uninstall", "--agent", "codex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    left = config.read_text()
    parsed = tomledit.parse_toml(left)
    assert "ipse" not in parsed.get("mcp_servers", {}) and "model_providers" not in parsed
    assert "model_provider" not in parsed and "ipse" not in left, left
    assert parsed["mcp_servers"]["other"]["command"] == "/bin/true"
    assert parsed["model"] == "o4" and parsed["tui"] == {"notifications": True}
    assert left.startswith("# mine\n")
    listed = _codex(codex_home, tmp_path, "mcp", "list", "--json")
    assert [s["name"] for s in json.loads(listed.stdout)] == ["other"]
    again = cli("uninstall", "--agent", "codex", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.strip() == "nothing to change"
    # reinstalled over Codex's rewrite (markers gone, tables moved): accepted, and read
    assert cli("install", "--agent", "codex", "--proxy", cwd=tmp_path).returncode == 0
    _codex(codex_home, tmp_path, "mcp", "add", "third", "--", "/bin/true")
    assert cli("install", "--agent", "codex", "--proxy", cwd=tmp_path).returncode == 0
    got = _codex(codex_home, tmp_path, "mcp", "get", "ipse", "--json")
    assert got.returncode == 0, got.stderr
    # --strict-config refuses a field this Codex does not know; a valid config gets to the
    # session header (and then waits for the proxy, which this test does not start)
    checked = _codex(
        codex_home,
        tmp_path,
        "exec",
        "--strict-config",
        "--skip-git-repo-check",
        "hi",
        timeout="15",
    )
    output = checked.stdout + checked.stderr
    assert "provider: ipse" in output, output


def test_ipse_entries_it_cannot_edit_are_reported_not_left_behind(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    command, args = launcher()
    entry = f"command = {json.dumps(command)}, args = {json.dumps([*args, 'mcp'])}"
    text = f"mcp_servers = {{ ipse = {{ {entry} }} }}\n"
    (codex_home / "config.toml").write_text(text)
    assert tomledit.parse_toml(text)["mcp_servers"]["ipse"]["args"][-1] == "mcp"
    done = cli("uninstall", "--agent", "codex", cwd=tmp_path)
    assert done.returncode == 2 and "cannot edit" in done.stderr, done.stdout + done.stderr
    assert (codex_home / "config.toml").read_text() == text
