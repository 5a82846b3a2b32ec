"""The real Gemini CLI connects to the server ``ipse install --agent gemini`` registered, with
the user's virtual environment not active, in settings with comments and in the folder
``GEMINI_CLI_HOME`` names; what install writes and says matches what Gemini gets (notes and
recall, no proxy; a project's servers load only in a trusted folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.support.clients import gemini_binary


def test_gemini_connects_to_the_installed_server(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemini = gemini_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    done = cli("install", "--agent", "gemini", cwd=project)
    assert done.returncode == 0, done.stderr
    # Gemini CLI loads a project's servers only in a folder the user trusts
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini").mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    env = {"HOME": str(home), "PATH": f"/usr/bin:/bin:{node}"}  # no virtual environment
    listed = subprocess.run(
        [gemini, "mcp", "list"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    output = listed.stdout + listed.stderr
    line = next((ln for ln in output.splitlines() if "ipse:" in ln), output)
    assert "Connected" in line, output


def _gemini_env(home: Path, **extra: str) -> dict[str, str]:
    node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    return {"HOME": str(home), "PATH": f"/usr/bin:/bin:{node}", **extra}


def _connected(listed: subprocess.CompletedProcess[str]) -> bool:
    output = listed.stdout + listed.stderr
    line = next((ln for ln in output.splitlines() if "ipse:" in ln), "")
    return "Connected" in line


def test_settings_with_comments_are_edited_as_gemini_reads_them(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI reads its settings as JSON with comments: install keeps every comment,
    Gemini connects to the server, and uninstall gives the file back byte for byte."""
    gemini = gemini_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    settings = project / ".gemini" / "settings.json"
    original = (
        b"// my settings\r\n{\r\n  /* the look */\r\n"
        b'  "ui": {"theme": "Default"}, // dark later\r\n'
        b'  "mcpServers": {\r\n    // none yet\r\n  }\r\n}\r\n'
    )
    settings.write_bytes(original)
    done = cli("install", "--agent", "gemini", cwd=project)
    assert done.returncode == 0, done.stderr
    installed = settings.read_bytes()
    for comment in (b"// my settings", b"/* the look */", b"// dark later", b"// none yet"):
        assert comment in installed
    assert installed.count(b"\n") == installed.count(b"\r\n")
    (home / ".gemini").mkdir()
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    listed = subprocess.run(
        [gemini, "mcp", "list"],
        env=_gemini_env(home),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert _connected(listed), listed.stdout + listed.stderr
    assert cli("uninstall", "--agent", "gemini", cwd=project).returncode == 0
    assert settings.read_bytes() == original


def test_user_install_follows_gemini_cli_home(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemini = gemini_binary()
    home, gemini_home, project = tmp_path / "home", tmp_path / "g-home", tmp_path / "project"
    for folder in (home, gemini_home, project):
        folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    done = cli("install", "--agent", "gemini", "--user", cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (gemini_home / ".gemini").iterdir()) == [
        "GEMINI.md",
        "settings.json",
    ]  # (and its notes say so)
    assert list(home.iterdir()) == []
    notes = cli("install", "--agent", "gemini", "--user", "--json", cwd=project).stdout
    assert "only in trusted folders" in notes  # user-level servers too, Gemini CLI says
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (gemini_home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    listed = subprocess.run(
        [gemini, "mcp", "list"],
        env=_gemini_env(home, GEMINI_CLI_HOME=str(gemini_home)),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert _connected(listed), listed.stdout + listed.stderr


def test_gemini_is_told_what_checkpoints_do_and_the_user_about_trust(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    done = cli("install", "--agent", "gemini", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    assert any("trusted folder" in n and str(project.resolve()) in n for n in notes), notes
    assert any("no ipse proxy serves Gemini" in n for n in notes), notes
    text = (project / "GEMINI.md").read_text()
    assert "nothing is removed from this conversation" in text
    assert "will be removed" not in text
    (home / ".gemini").mkdir()
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    again = cli("install", "--agent", "gemini", "--json", cwd=project)
    assert not any("trusted folder" in n for n in json.loads(again.stdout)["notes"])


@pytest.mark.parametrize(
    ("rules", "trusted"),
    [
        ({}, False),
        ({"{p}": "TRUST_FOLDER"}, True),
        ({"{t}": "TRUST_FOLDER"}, True),  # a folder above
        ({"{p}/sub": "TRUST_PARENT"}, True),  # the parent of the rule's folder
        ({"{p}": "TRUST_PARENT"}, True),  # the folder above, which holds the project
        ({"{t}/other": "TRUST_FOLDER"}, False),  # a sibling
        ({"{t}": "TRUST_FOLDER", "{p}": "DO_NOT_TRUST"}, False),  # the longest rule decides
        ({"{t}": "DO_NOT_TRUST", "{p}": "TRUST_FOLDER"}, True),
    ],
)
def test_the_trust_note_follows_gemini_trust_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: dict[str, str], trusted: bool
) -> None:
    from ipse.agents._install import install_notes

    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    names = {"{p}": str(project.resolve()), "{t}": str(tmp_path.resolve())}
    written = {}
    for rule, level in rules.items():
        for key, value in names.items():
            rule = rule.replace(key, value)
        written[rule] = level
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "trustedFolders.json").write_text(json.dumps(written))
    notes = install_notes("gemini", project)
    assert any("trusted folder" in n for n in notes) == (not trusted), (written, notes)


def test_the_entry_trusts_ipses_tools_so_headless_runs_offer_them(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gemini -p`` cannot ask before a tool runs, so it offers only tools that need no
    confirmation: the entry says ``trust`` (tests/journey/test_gemini_journey.py runs it), and
    install says so."""
    monkeypatch.setenv("HOME", str(tmp_path))
    done = cli("install", "--agent", "gemini", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".gemini" / "settings.json").read_text())["mcpServers"]["ipse"]
    assert entry["trust"] is True
    notes = json.loads(done.stdout)["notes"]
    assert any("the entry says trust" in n and "gemini -p" in n for n in notes), notes
