"""What every agent CLI module in the table does, parametrized over the table: a module added
to it gets these tests without writing one.

For each agent CLI, scope (project, user), proxy and status line setting it supports, with
every file its install touches already there and holding the user's own entries (another MCP
server, other settings, the user's instructions): install keeps the user's entries as they
were; installing again changes nothing; uninstall gives every file back byte for byte. The
same with every file in CRLF, with a byte order mark, and with comments where the file's format
has them (TOML, and JSON where the agent CLI reads JSON with comments). Then the module's own
answers: its name is the one the table gives it, its entry is recognised as ipse's, its
compaction settings are named and their rule stated, its session files are in a format ipse
reads and under a root its environment variable moves.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipse.agents import AGENTS, install_agent, uninstall_agent
from ipse.agents._agent import AgentCLI
from ipse.agents._commands import is_ipse_server
from ipse.agents._install import install_notes
from ipse.agents._table import agent_named
from ipse.transcript import FORMATS
from tests.agents.test_install_agents import snapshot

BOM = "\ufeff"
THEIRS = {"command": "node", "args": ["their-server.js"]}


def _cases() -> Iterator[tuple[str, bool, bool, bool]]:
    for name in AGENTS:
        agent = agent_named(name)
        for user in (False, True):
            for proxy in (False, True) if agent.proxy else (False,):
                for statusline in (False, True) if agent.statusline else (False,):
                    yield name, user, proxy, statusline


CASES = [pytest.param(*case, id=f"{case[0]}-{'user' if case[1] else 'project'}"
                      f"{'-proxy' if case[2] else ''}{'-statusline' if case[3] else ''}")
         for case in _cases()]  # fmt: skip


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project, home), every agent CLI's folder variable pointing into the home."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "IPSE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return project, home


def _config_text(path: Path, comments: bool) -> str:
    """A file of the user's in ``path``'s format, with an MCP server of theirs in it."""
    if path.suffix == ".toml":
        return (
            '# my codex settings\nmodel = "o4"  # the fast one\n\n'
            '[mcp_servers.theirs]\ncommand = "node"\nargs = ["their-server.js"]\n'
        )
    if path.suffix == ".json":
        value = {"theme": "dark", "mcpServers": {"theirs": THEIRS}, "env": {"DEBUG": "1"}}
        text = json.dumps(value, indent=2) + "\n"
        if comments:
            text = "// my settings\n" + text.replace('"theme"', '/* look */ "theme"', 1)
        return text
    return "# My project\n\nBuild with `make`; never push on Fridays.\n"


def _prepare(agent: AgentCLI, root: Path, user: bool, style: str) -> list[Path]:
    """Write every file the agent CLI's install touches, in ``style``; return them."""
    where = agent.paths(root, user)
    files = [p for p in (where.config, where.instructions, where.settings) if p is not None]
    for path in files:
        text = _config_text(path, agent.comments and style == "comments")
        if style == "crlf":
            text = text.replace("\n", "\r\n")
        if style == "bom":
            text = BOM + text
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    return files


def _theirs(agent: AgentCLI, path: Path) -> object:
    """The user's own MCP server entry in the agent CLI's config, as parsed."""
    from ipse.agents import _jsonedit as jsonedit

    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".toml":
        return tomllib.loads(text)["mcp_servers"]["theirs"]
    return jsonedit.parse(text, comments=agent.comments)[0]["mcpServers"]["theirs"]


@pytest.mark.parametrize("style", ["lf", "crlf", "bom", "comments"])
@pytest.mark.parametrize(("name", "user", "proxy", "statusline"), CASES)
def test_install_keeps_theirs_is_idempotent_and_uninstall_gives_every_byte_back(
    homes: tuple[Path, Path], name: str, user: bool, proxy: bool, statusline: bool, style: str
) -> None:
    project, home = homes
    agent = agent_named(name)
    files = _prepare(agent, project, user, style)
    before = snapshot(project, home)
    install_agent(name, project, user=user, proxy=proxy, port=9555, statusline=statusline)
    installed = snapshot(project, home)
    assert installed != before
    where = agent.paths(project, user)
    assert _theirs(agent, where.config) == THEIRS  # the user's own entry, untouched
    for path in files:
        data = path.read_bytes()
        if style == "crlf":
            assert data.count(b"\n") == data.count(b"\r\n"), path
        if style == "bom":
            assert data.startswith(BOM.encode()), path
        if style == "comments" and (agent.comments or path.suffix in (".toml", ".md")):
            first = _config_text(path, agent.comments).splitlines()[0]
            assert first.encode() in data, path
    again = install_agent(name, project, user=user, proxy=proxy, port=9555, statusline=statusline)
    assert {c.action for c in again} == {"unchanged"}
    assert snapshot(project, home) == installed
    uninstall_agent(name, project, user=user)
    assert snapshot(project, home) == before


@pytest.mark.parametrize(("name", "user", "proxy", "statusline"), CASES)
def test_into_empty_folders_and_out_again_leaves_nothing(
    homes: tuple[Path, Path], name: str, user: bool, proxy: bool, statusline: bool
) -> None:
    project, home = homes
    install_agent(name, project, user=user, proxy=proxy, statusline=statusline)
    notes = install_notes(name, project, user=user, proxy=proxy, statusline=statusline)
    assert notes  # something to tell the user
    assert any("statusline" in n for n in notes) == statusline
    uninstall_agent(name, project, user=user)
    assert snapshot(project, home) == {}


@pytest.mark.parametrize("name", AGENTS)
def test_the_module_answers_for_the_name_the_table_gives_it(name: str) -> None:
    agent = agent_named(name)
    assert agent.name == name and agent.label and agent.instructions.endswith(".md")
    assert is_ipse_server(agent.server_entry())
    assert agent.compaction.settings and agent.compaction.rule and agent.compaction.verified
    assert agent.session_format is None or agent.session_format in FORMATS


@pytest.mark.parametrize("name", AGENTS)
def test_its_sessions_root_follows_its_environment_variable(
    homes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    agent = agent_named(name)
    if agent.session_format is None:
        return
    assert agent.session_globs
    home = homes[1]
    default = agent.sessions_root()
    assert default is not None and home in default.parents
    elsewhere = home / "elsewhere"
    variable = {"claude-code": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME",
                "gemini": "GEMINI_CLI_HOME"}[name]  # fmt: skip
    monkeypatch.setenv(variable, str(elsewhere))
    moved = agent.sessions_root()
    assert moved is not None and elsewhere in moved.parents


@pytest.mark.parametrize("name", [n for n in AGENTS if agent_named(n).statusline])
@pytest.mark.parametrize("user", [False, True])
def test_a_status_line_of_the_users_is_refused_and_left_as_it_was(
    homes: tuple[Path, Path], name: str, user: bool
) -> None:
    from ipse.errors import InputError

    project, home = homes
    where = agent_named(name).paths(project, user)
    assert where.settings is not None
    where.settings.parent.mkdir(parents=True, exist_ok=True)
    theirs = '{\n  "statusLine": {"type": "command", "command": "~/bin/my-line"}\n}\n'
    where.settings.write_text(theirs)
    before = snapshot(project, home)
    with pytest.raises(InputError, match=r"statusLine is already set .*my-line"):
        install_agent(name, project, user=user, statusline=True)
    assert snapshot(project, home) == before
    install_agent(name, project, user=user)  # without --statusline: theirs stays, no question
    assert json.loads(where.settings.read_text())["statusLine"]["command"] == "~/bin/my-line"
    uninstall_agent(name, project, user=user)
    assert snapshot(project, home) == before


def test_a_name_not_in_the_table_is_refused(homes: tuple[Path, Path]) -> None:
    from ipse.errors import UsageError

    with pytest.raises(UsageError, match="unknown agent 'cursor'"):
        install_agent("cursor", homes[0])
