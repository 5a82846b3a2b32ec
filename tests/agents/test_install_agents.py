"""``ipse install`` / ``ipse uninstall`` for Claude Code, Codex and Gemini CLI: what each agent's
files get, that the command runs without the virtual environment, refusals, and that uninstall
gives back every file byte for byte (and removes the files and folders install created)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.agents import install_agent, uninstall_agent
from ipse.agents._commands import PROXY_URL, launcher
from ipse.agents.claude_code import prompt_hook, proxy_hook
from ipse.errors import InputError
from tests.conftest import CliRun

SETTINGS_STYLES = {
    "none": None,
    "pretty": json.dumps({"model": "opus", "permissions": {"allow": ["Bash(ls)"]}}, indent=2)
    + "\n",
    "tabs": '{\n\t"theme": "dark",\n\t"mcpServers": {\n\t\t"other": {"command": "x"}\n\t}\n}',
    "compact": '{"model":"opus","env":{"DEBUG":"1"},"hooks":{"Stop":[]}}',
    "empty": "{}\n",
}
DOC_STYLES = {"none": None, "plain": "# Project\n\nBuild with make.", "newline": "# Notes\n"}


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project, home): HOME, CODEX_HOME and CLAUDE_CONFIG_DIR point into tmp_path."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return project, home


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            found[str(path)] = path.read_bytes() if path.is_file() else None
    return found


def _write(path: Path, text: str | None) -> None:
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _files(agent: str, project: Path, home: Path, user: bool) -> tuple[Path, Path, Path | None]:
    """(server config, instructions file, proxy settings) of an agent."""
    if agent == "claude-code":
        if user:
            return (
                home / ".claude.json",
                home / ".claude" / "CLAUDE.md",
                home / ".claude" / ("settings.json"),
            )
        return project / ".mcp.json", project / "CLAUDE.md", project / ".claude" / "settings.json"
    if agent == "codex":
        docs = home / ".codex" if user else project
        return home / ".codex" / "config.toml", docs / "AGENTS.md", None
    folder = (home if user else project) / ".gemini"
    return folder / "settings.json", (folder if user else project) / "GEMINI.md", None


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
@pytest.mark.parametrize("user", [False, True])
@pytest.mark.parametrize("style", list(SETTINGS_STYLES))
@pytest.mark.parametrize("doc", list(DOC_STYLES))
def test_json_agents_install_and_uninstall_byte_for_byte(
    cli: CliRun, homes: tuple[Path, Path], agent: str, user: bool, style: str, doc: str
) -> None:
    project, home = homes
    config, instructions, settings = _files(agent, project, home, user)
    _write(config, SETTINGS_STYLES[style])
    _write(instructions, DOC_STYLES[doc])
    if settings is not None:
        _write(settings, SETTINGS_STYLES[style])
    before = snapshot(project, home)
    proxy = ["--proxy"] if agent == "claude-code" else []
    scope = ["--user"] if user else []
    done = cli("install", "--agent", agent, *scope, *proxy, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    entry = json.loads(config.read_text())["mcpServers"]["ipse"]
    command, args = launcher()
    assert entry["command"] == command and entry["args"] == [*args, "mcp"]
    assert "call `micro_handoff`" in instructions.read_text()
    if settings is not None:
        data = json.loads(settings.read_text())
        assert data["env"]["ANTHROPIC_BASE_URL"] == PROXY_URL
        assert data["hooks"]["SessionStart"][-1] == proxy_hook()
    installed = snapshot(project, home)
    again = cli("install", "--agent", agent, *scope, *proxy, "--json", cwd=project)
    assert {c["action"] for c in json.loads(again.stdout)["changes"]} == {"unchanged"}
    assert snapshot(project, home) == installed
    gone = cli("uninstall", "--agent", agent, *scope, cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert snapshot(project, home) == before


CODEX_STYLES = {
    "none": None,
    "keys": 'model = "o4"\napproval_policy = "never"\n',
    "tables": '# mine\nmodel = "o4"\n\n[projects."/w"]\ntrust_level = "trusted"\n\n'
    '[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "x"]\n',
    "no newline": "[tui]\nnotifications = true",
}


@pytest.mark.parametrize("user", [False, True])
@pytest.mark.parametrize("proxy", [False, True])
@pytest.mark.parametrize("style", list(CODEX_STYLES))
def test_codex_install_and_uninstall_byte_for_byte(
    cli: CliRun,
    homes: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    user: bool,
    proxy: bool,
    style: str,
) -> None:
    import tomlkit

    project, home = homes
    codex = home / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    config = codex / "config.toml"
    _write(config, CODEX_STYLES[style])
    before = snapshot(project, home)
    flags = (["--user"] if user else []) + (["--proxy"] if proxy else [])
    done = cli("install", "--agent", "codex", *flags, cwd=project)
    assert done.returncode == 0, done.stderr
    parsed = tomlkit.parse(config.read_text())
    command, args = launcher()
    assert parsed["mcp_servers"]["ipse"]["command"] == command
    assert parsed["mcp_servers"]["ipse"]["args"] == [*args, "mcp"]
    if proxy:
        assert parsed["model_provider"] == "ipse"
        provider = parsed["model_providers"]["ipse"]
        assert provider["base_url"] == PROXY_URL + "/v1" and provider["wire_api"] == "responses"
    else:
        assert "model_provider" not in parsed
    assert (codex if user else project).joinpath("AGENTS.md").is_file()
    installed = snapshot(project, home)
    assert cli("install", "--agent", "codex", *flags, cwd=project).returncode == 0
    assert snapshot(project, home) == installed
    scope = ["--user"] if user else []
    assert cli("uninstall", "--agent", "codex", *scope, cwd=project).returncode == 0
    assert snapshot(project, home) == before


def test_the_installed_server_runs_without_the_virtual_environment(
    cli: CliRun, homes: tuple[Path, Path]
) -> None:
    project, _ = homes
    assert cli("install", "--agent", "gemini", cwd=project).returncode == 0
    entry = json.loads((project / ".gemini" / "settings.json").read_text())["mcpServers"]["ipse"]
    bare = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]}  # no venv, no PYTHONPATH
    done = subprocess.run(
        [entry["command"], *entry["args"], "--help"], env=bare, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "Serve ipse's tools to an agent over MCP" in done.stdout


def test_the_proxy_hook_is_shell_quoted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    python = tmp_path / "my env $(touch pwned)" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    monkeypatch.setattr("sys.executable", str(python))
    home = tmp_path / "home `id`"
    monkeypatch.setenv("IPSE_HOME", str(home))
    command = proxy_hook(9100)["hooks"][0]["command"]
    assert shlex.split(command) == [
        f"IPSE_HOME={home}",
        str(python),
        "-m",
        "ipse",
        "proxy",
        "start",
        "--port",
        "9100",
        ">/dev/null",
    ]
    monkeypatch.delenv("IPSE_HOME")
    command = proxy_hook()["hooks"][0]["command"]
    assert shlex.split(command) == [str(python), "-m", "ipse", "proxy", "start", ">/dev/null"]
    words = shlex.split(prompt_hook()["hooks"][0]["command"])
    assert words[:3] == [str(python), "-S", "-c"] and '"127.0.0.1", 8765' in words[3]
    assert words[4:] == [
        "2>/dev/null",
        "||",
        str(python),
        "-m",
        "ipse",
        "proxy",
        "start",
        ">/dev/null",
    ]


def test_another_base_url_is_refused_and_nothing_is_written(
    cli: CliRun, homes: tuple[Path, Path]
) -> None:
    project, home = homes
    _write(project / ".claude" / "settings.json", '{"env": {"ANTHROPIC_BASE_URL": "http://gw"}}')
    before = snapshot(project, home)
    done = cli("install", "--agent", "claude-code", "--proxy", cwd=project)
    assert done.returncode == 2 and "ANTHROPIC_BASE_URL is already 'http://gw'" in done.stderr
    assert snapshot(project, home) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('model_provider = "azure"\n', "already selects model_provider = 'azure'"),
        ('[mcp_servers.ipse]\ncommand = "mine"\n', "already has [mcp_servers.ipse]"),
        ("not = [toml\n", "not valid TOML"),
    ],
)
def test_codex_conflicts_are_refused(
    cli: CliRun, homes: tuple[Path, Path], text: str, message: str
) -> None:
    project, home = homes
    _write(home / ".codex" / "config.toml", text)
    before = snapshot(project, home)
    done = cli("install", "--agent", "codex", "--proxy", cwd=project)
    assert done.returncode == 2 and message in done.stderr
    assert snapshot(project, home) == before


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_a_users_own_ipse_server_is_refused_and_left_alone(
    cli: CliRun, homes: tuple[Path, Path], agent: str
) -> None:
    project, home = homes
    config, _, _ = _files(agent, project, home, user=False)
    _write(config, '{"mcpServers": {"ipse": {"command": "node", "args": ["my-ipse.js"]}}}\n')
    before = snapshot(project, home)
    done = cli("install", "--agent", agent, cwd=project)
    assert done.returncode == 2 and "mcpServers.ipse (not ipse's own)" in done.stderr
    assert snapshot(project, home) == before
    done = cli("uninstall", "--agent", agent, cwd=project)
    assert done.returncode == 0
    assert snapshot(project, home) == before


def test_gemini_has_no_proxy(cli: CliRun, homes: tuple[Path, Path]) -> None:
    project, home = homes
    done = cli("install", "--agent", "gemini", "--proxy", cwd=project)
    assert done.returncode == 2 and "Gemini CLI" in done.stderr
    assert snapshot(project, home) == {}


@pytest.mark.parametrize("style", ["pretty", "tabs", "compact"])
def test_state_uninstall_leaves_settings_byte_for_byte(
    cli: CliRun, homes: tuple[Path, Path], style: str
) -> None:
    project, home = homes
    settings = project / ".claude" / "settings.json"
    _write(settings, SETTINGS_STYLES[style])
    _write(project / "CLAUDE.md", "# Notes\n")
    before = snapshot(project, home)
    assert cli("state", "install", "--agent", "claude-code", cwd=project).returncode == 0
    assert json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert cli("state", "uninstall", cwd=project).returncode == 0
    assert snapshot(project, home) == before


def test_a_base_url_the_user_set_to_the_proxy_stays(cli: CliRun, homes: tuple[Path, Path]) -> None:
    project, home = homes
    settings = project / ".claude" / "settings.json"
    _write(settings, json.dumps({"env": {"ANTHROPIC_BASE_URL": PROXY_URL}}, indent=2) + "\n")
    before = snapshot(project, home)
    assert cli("install", "--agent", "claude-code", "--proxy", cwd=project).returncode == 0
    assert json.loads(settings.read_text())["hooks"]["SessionStart"] == [proxy_hook()]
    assert cli("uninstall", "--agent", "claude-code", cwd=project).returncode == 0
    assert snapshot(project, home) == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["model", "env", "hooks", "mcpServers", "theme", "x"]),
        st.none() | st.integers() | st.text(max_size=5) | st.just({}),
        max_size=4,
    ),
    st.sampled_from([{"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"indent": None}]),
    st.booleans(),
    st.sampled_from(["claude-code", "gemini", "codex"]),
)
def test_install_then_uninstall_on_generated_files(
    existing: dict[str, Any], style: dict[str, Any], newline: bool, agent: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        project, home = Path(folder) / "p", Path(folder) / "h"
        project.mkdir()
        home.mkdir()
        text = json.dumps(existing, **style) + ("\n" if newline else "")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))
            patch.delenv("CODEX_HOME", raising=False)
            patch.delenv("CLAUDE_CONFIG_DIR", raising=False)
            config, _, proxy_settings = _files(agent, project, home, False)
            if agent != "codex":
                _write(config, text)
            if proxy_settings is not None:
                _write(proxy_settings, text)
            before = snapshot(project, home)
            try:
                install_agent(agent, project, proxy=agent != "gemini")
            except InputError:  # a value ipse would have to overwrite: refused, nothing written
                assert snapshot(project, home) == before
                return
            uninstall_agent(agent, project)
            assert snapshot(project, home) == before


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
@pytest.mark.parametrize("depth", [990, 100_000])
def test_a_config_nested_too_deep_is_refused_and_left_alone(
    cli: CliRun, homes: tuple[Path, Path], agent: str, depth: int
) -> None:
    """A project's config may come from someone else: one nested deeper than the parsers
    recurse is bad input (one line, exit 2, nothing written), never a crash."""
    project, home = homes
    config, _, _ = _files(agent, project, home, user=False)
    _write(config, '{"x": ' + "[" * depth + "]" * depth + "}\n")
    before = snapshot(project, home)
    for command in ("install", "uninstall"):
        done = cli(command, "--agent", agent, cwd=project)
        assert done.returncode in (0, 2), done.stderr
        assert "internal error" not in done.stderr, done.stderr
        assert snapshot(project, home) == before


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
@pytest.mark.parametrize("blank", ["", "\n", "  \n\n"])
def test_a_blank_config_comes_back_blank(
    cli: CliRun, homes: tuple[Path, Path], agent: str, blank: str
) -> None:
    """Found by fuzzing: a config file that existed but was empty came back as ``{}``."""
    project, home = homes
    config, _, settings_file = _files(agent, project, home, user=False)
    _write(config, blank)
    if settings_file is not None:
        _write(settings_file, blank)
    before = snapshot(project, home)
    assert cli("uninstall", "--agent", agent, cwd=project).returncode == 0  # nothing installed
    assert snapshot(project, home) == before
    proxy = ["--proxy"] if agent == "claude-code" else []
    assert cli("install", "--agent", agent, *proxy, cwd=project).returncode == 0
    assert "mcpServers" in config.read_text()
    assert cli("uninstall", "--agent", agent, cwd=project).returncode == 0
    assert snapshot(project, home) == before


@pytest.mark.parametrize(
    ("agent", "proxy"),
    [
        ("codex", False),
        ("codex", True),
        ("claude-code", False),
        ("claude-code", True),
        ("gemini", False),
    ],
)
def test_the_instructions_say_what_this_install_does(
    cli: CliRun, homes: tuple[Path, Path], agent: str, proxy: bool
) -> None:
    """Only an agent behind the proxy loses its tool calls at a checkpoint: the others are told
    that a checkpoint keeps notes and removes nothing."""
    project, home = homes
    _, instructions, _ = _files(agent, project, home, user=False)
    flags = ["--proxy"] if proxy else []
    assert cli("install", "--agent", agent, *flags, cwd=project).returncode == 0
    text = instructions.read_text()
    assert ("tool calls and their results will be removed" in text) == proxy, text
    assert ("nothing is removed from this conversation" in text) == (not proxy), text


def test_upstreams_go_into_the_hooks_quoted_and_come_out_on_uninstall(
    cli: CliRun, homes: tuple[Path, Path]
) -> None:
    project, home = homes
    settings = project / ".claude" / "settings.json"
    _write(settings, SETTINGS_STYLES["pretty"])
    before = snapshot(project, home)
    gateway = "http://gw.local:8080/a b$(x)"
    done = cli(
        "install",
        "--agent",
        "claude-code",
        "--proxy",
        "--port",
        "9300",
        "--anthropic-upstream",
        gateway,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    hooks = json.loads(settings.read_text())["hooks"]
    words = shlex.split(hooks["SessionStart"][0]["hooks"][0]["command"])
    assert words[-6:] == ["start", "--port", "9300", "--anthropic-upstream", gateway, ">/dev/null"]
    assert hooks["UserPromptSubmit"] == [prompt_hook(9300, {"anthropic": gateway})]
    # installed again on the default port: the old hooks are replaced, not added to
    assert cli("install", "--agent", "claude-code", "--proxy", cwd=project).returncode == 0
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks == {"SessionStart": [proxy_hook()], "UserPromptSubmit": [prompt_hook()]}
    assert cli("uninstall", "--agent", "claude-code", cwd=project).returncode == 0
    assert snapshot(project, home) == before
    refused = cli("install", "--agent", "codex", "--openai-upstream", gateway, cwd=project)
    assert refused.returncode == 2 and "go with --proxy" in refused.stderr


@pytest.mark.parametrize("theirs", [None, "true"])
def test_claude_code_waits_for_the_mcp_servers_unless_the_user_said_otherwise(
    cli: CliRun, homes: tuple[Path, Path], theirs: str | None
) -> None:
    """Claude Code sends its first request before a slow MCP server connects unless
    MCP_CONNECTION_NONBLOCKING is false: --proxy sets it (a value the user set stays), and
    uninstall takes it out again byte for byte."""
    project, home = homes
    settings = project / ".claude" / "settings.json"
    if theirs is None:
        _write(settings, SETTINGS_STYLES["pretty"])
    else:
        _write(settings, '{\n  "env": {\n    "MCP_CONNECTION_NONBLOCKING": "true"\n  }\n}\n')
    before = snapshot(project, home)
    for _ in range(2):  # installed twice: still one entry, and still ours to remove
        done = cli("install", "--agent", "claude-code", "--proxy", cwd=project)
        assert done.returncode == 0, done.stderr
    env = json.loads(settings.read_text())["env"]
    assert env["MCP_CONNECTION_NONBLOCKING"] == (theirs or "false")
    assert cli("uninstall", "--agent", "claude-code", cwd=project).returncode == 0
    assert snapshot(project, home) == before


def test_the_record_goes_into_the_hooks_and_the_printed_start_by_absolute_path(
    cli: CliRun, homes: tuple[Path, Path]
) -> None:
    project, home = homes
    settings = project / ".claude" / "settings.json"
    _write(settings, SETTINGS_STYLES["pretty"])
    before = snapshot(project, home)
    done = cli(
        "install", "--agent", "claude-code", "--proxy", "--record", "my record.jsonl", cwd=project
    )
    assert done.returncode == 0, done.stderr
    record = str((project / "my record.jsonl").resolve())  # the hook runs in another folder
    hooks = json.loads(settings.read_text())["hooks"]
    for event in ("SessionStart", "UserPromptSubmit"):
        words = shlex.split(hooks[event][0]["hooks"][0]["command"])
        assert words[-3:] == ["--record", record, ">/dev/null"], words
    assert cli("uninstall", "--agent", "claude-code", cwd=project).returncode == 0
    assert snapshot(project, home) == before
    said = cli("install", "--agent", "codex", "--proxy", "--record", "r.jsonl", cwd=project)
    assert said.returncode == 0, said.stderr
    printed = said.stdout.split("`")[1]
    assert shlex.split(printed)[-2:] == ["--record", str((project / "r.jsonl").resolve())]
    refused = cli("install", "--agent", "codex", "--record", "r.jsonl", cwd=project)
    assert refused.returncode == 2 and "go with --proxy" in refused.stderr


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_installing_again_without_proxy_keeps_the_proxy_and_its_text(
    cli: CliRun, homes: tuple[Path, Path], agent: str
) -> None:
    project, home = homes
    config, instructions, _ = _files(agent, project, home, user=False)
    assert (
        cli("install", "--agent", agent, "--proxy", "--port", "9301", cwd=project).returncode == 0
    )
    installed = snapshot(project, home)
    assert cli("install", "--agent", agent, cwd=project).returncode == 0
    assert snapshot(project, home) == installed  # nothing changed: not the port, not the text
    assert "tool calls and their results will be removed" in instructions.read_text()
    assert cli("uninstall", "--agent", agent, cwd=project).returncode == 0
    assert snapshot(project, home) == {} or not config.exists()
