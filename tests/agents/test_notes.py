"""What install says is what the agent CLI's files configure: installing again without
``--proxy`` keeps an earlier proxy (its entries, its port, the instructions that tool calls are
removed), and the notes say so rather than "nothing is removed from the conversation"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliRun


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, folder = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    return folder


def _notes(cli: CliRun, project: Path, *flags: str) -> list[str]:
    done = cli("install", *flags, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    notes: list[str] = json.loads(done.stdout)["notes"]
    return notes


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_installing_again_without_proxy_says_the_proxy_stays(
    cli: CliRun, project: Path, agent: str
) -> None:
    first = _notes(cli, project, "--agent", agent, "--proxy", "--port", "9377")
    assert any("http://127.0.0.1:9377" in n for n in first), first
    again = _notes(cli, project, "--agent", agent)
    said = " ".join(again)
    assert "nothing is removed from the conversation" not in said, again
    assert "through the ipse proxy at http://127.0.0.1:9377" in said, again
    assert "installed earlier with --proxy, which stays" in said, again
    text = cli("install", "--agent", agent, cwd=project).stdout  # the human output too
    assert "nothing is removed" not in text and "9377" in text, text


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_without_any_proxy_the_notes_say_nothing_is_removed(
    cli: CliRun, project: Path, agent: str
) -> None:
    notes = _notes(cli, project, "--agent", agent)
    assert any("nothing is removed from the conversation" in n for n in notes), notes
    assert not any("ipse proxy at" in n for n in notes), notes


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_install_with_the_proxy_says_the_autopilot_is_on_and_how_to_turn_it_off(
    cli: CliRun, project: Path, agent: str
) -> None:
    for flags in (["--proxy", "--port", "9378"], []):  # (again without: the proxy stays)
        said = " ".join(_notes(cli, project, "--agent", agent, *flags))
        assert "autopilot is on (--autopilot cut)" in said, said
        assert "IPSE_AUTOPILOT=off" in said, said
    cli("uninstall", "--agent", agent, cwd=project)
    assert "autopilot" not in " ".join(_notes(cli, project, "--agent", agent))
