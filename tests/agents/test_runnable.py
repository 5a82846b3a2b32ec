"""What install registers must run: without the extras it needs, install refuses in one line that
names the extra and the command that installs it; and a proxy that cannot start never leaves
Claude Code waiting: the prompt hook refuses the prompt with the reason, no request is sent.

The missing extra is simulated the way a user meets it: a process in which importing the
package fails (a ``sitecustomize`` on PYTHONPATH that blocks the named modules), for install
and for everything the installed hooks start."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.test_install_agents import snapshot
from tests.support.clients import claude_binary

SRC = Path(__file__).resolve().parents[2] / "src"
BLOCKER = '''"""Test only: importing the modules named in IPSE_TEST_BLOCK fails."""
import os
import sys

_BLOCKED = set(filter(None, os.environ.get("IPSE_TEST_BLOCK", "").split(",")))


class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
'''


def _blocking_env(tmp_path: Path, modules: str, **extra: str) -> dict[str, str]:
    folder = tmp_path / "blocker"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = f"{folder}{os.pathsep}{SRC}"
    env["IPSE_TEST_BLOCK"] = modules
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("agent", "flags", "blocked", "extra"),
    [
        ("claude-code", ["--proxy"], "uvicorn", "proxy"),
        ("codex", ["--proxy"], "starlette", "proxy"),
        ("claude-code", ["--proxy"], "httpx", "proxy"),
    ],
)
def test_install_refuses_what_cannot_run_and_names_the_extra(
    tmp_path: Path, agent: str, flags: list[str], blocked: str, extra: str
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = _blocking_env(tmp_path, blocked, HOME=str(home), CODEX_HOME=str(home / ".codex"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    before = snapshot(project, home)
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "install", "--agent", agent, *flags],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"'{blocked}' (extra {extra})" in lines[0]
    assert f"-m pip install '{SRC.parent}[{extra}]'" in lines[0]  # from this checkout
    assert snapshot(project, home) == before


def _registered(agent: str, project: Path, home: Path) -> tuple[list[str], dict[str, str]]:
    """The server command install registered for ``agent``, and the environment it adds."""
    if agent == "codex":
        from ipse.agents import _tomledit as tomledit

        text = (home / ".codex" / "config.toml").read_text()
        entry = tomledit.parse_toml(text)["mcp_servers"]["ipse"]
    else:
        config = project / (".mcp.json" if agent == "claude-code" else ".gemini/settings.json")
        entry = json.loads(config.read_text())["mcpServers"]["ipse"]
    return [entry["command"], *entry["args"]], dict(entry.get("env") or {})


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_the_stdio_server_installs_and_serves_without_the_mcp_sdk(
    tmp_path: Path, agent: str, _isolated_home: Path
) -> None:
    """``ipse mcp`` over stdio answers by itself, so an install that registers only it asks for
    no extra: without the MCP SDK install succeeds, and the command it registered answers
    ``initialize``, ``tools/list`` and a ``micro_handoff`` call in that same environment."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = _blocking_env(
        tmp_path,
        "mcp,mcp_types",
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),
        IPSE_HOME=str(_isolated_home),
    )
    env.pop("CLAUDE_CONFIG_DIR", None)
    blocked = subprocess.run(
        [sys.executable, "-c", "import mcp"], env=env, capture_output=True, text=True
    )
    assert blocked.returncode != 0 and "No module named 'mcp'" in blocked.stderr
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "install", "--agent", agent],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    command, extra = _registered(agent, project, home)
    notes = {"done": ["installed without the SDK"], "open": ["serve"]}
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "micro_handoff", "arguments": notes},
        },
    ]
    served = subprocess.run(
        command,
        input="".join(json.dumps(r) + "\n" for r in requests),
        env={**env, **extra},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = {a["id"]: a for a in map(json.loads, served.stdout.splitlines())}
    assert set(answers) == {1, 2, 3}, served.stdout + served.stderr
    assert answers[1]["result"]["serverInfo"]["name"] == "ipse"
    names = {t["name"] for t in answers[2]["result"]["tools"]}
    assert {"micro_handoff", "recall", "state_resume"} <= names
    assert answers[3]["result"].get("isError") is not True, answers[3]
    assert "Checkpoint checkpoint-" in answers[3]["result"]["content"][0]["text"]


def test_without_the_proxy_extra_claude_code_refuses_the_prompt_at_once(
    cli: object, tmp_path: Path, _isolated_home: Path
) -> None:
    """Installed with the extras; then uvicorn is gone (another environment, an uninstall):
    the hooks cannot start the proxy, and Claude Code says why instead of retrying a closed
    port for minutes (what it did when only the SessionStart hook ran)."""
    claude = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "IPSE_HOME": str(_isolated_home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "ipse",
            "install",
            "--agent",
            "claude-code",
            "--proxy",
            "--port",
            str(port),
        ],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit"}
    run_env = _blocking_env(
        tmp_path,
        "uvicorn",
        HOME=str(home),
        IPSE_HOME=str(_isolated_home),
        ANTHROPIC_API_KEY="sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    run_env.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run(
        [
            claude,
            "-p",
            "Say hello.",
            "--output-format",
            "stream-json",
            "--verbose",
            "--strict-mcp-config",
        ],
        env=run_env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    retries = [e for e in events if e.get("subtype") == "api_retry"]
    assert retries == [], "Claude Code retried a proxy that is not there"
    said = "\n".join(str(e.get("content", "")) for e in events if e.get("type") == "system")
    assert "UserPromptSubmit operation blocked by hook" in said, done.stdout[-2000:]
    assert "uvicorn" in said and "[proxy]" in said, said
    result = next(e for e in events if e.get("type") == "result")
    assert result["num_turns"] == 0 and result["duration_api_ms"] == 0


def test_the_hooks_start_the_proxy_and_stay_out_of_the_context(
    tmp_path: Path, _isolated_home: Path
) -> None:
    """The other side: with the extras, the SessionStart hook starts the proxy toward the
    upstream install was given, the prompt hook finds it answering, the prompt reaches the model
    through it, and nothing the hooks print becomes part of the conversation (before, the
    SessionStart hook's "ipse proxy: started at ..." reached the model as session context)."""
    pytest.importorskip("uvicorn")
    from tests.support.anthropic_upstream import anthropic_upstream

    claude = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "IPSE_HOME": str(_isolated_home)}
    env.pop("CLAUDE_CONFIG_DIR", None)

    def ipse(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ipse", *args],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )

    with anthropic_upstream(["Hello from the model."]) as upstream:
        installed = ipse(
            "install",
            "--agent",
            "claude-code",
            "--proxy",
            "--port",
            str(port),
            "--anthropic-upstream",
            upstream.url,
        )
        assert installed.returncode == 0, installed.stderr
        assert ipse("proxy", "status", "--port", str(port)).returncode != 0  # not yet running
        try:
            done = subprocess.run(
                [claude, "-p", "Say hello.", "--strict-mcp-config"],
                env={
                    **env,
                    "ANTHROPIC_API_KEY": "sk-ant-test",
                    "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                },
                cwd=project,
                capture_output=True,
                text=True,
                timeout=240,
            )
            status = ipse("proxy", "status", "--port", str(port), "--json")
        finally:
            ipse("proxy", "stop", "--port", str(port))
        requests = upstream.messages_requests()
    assert done.returncode == 0, done.stderr
    assert "Hello from the model." in done.stdout
    assert json.loads(status.stdout)["running"] is True  # the hook started it
    conversation = json.dumps([r["messages"] for r in requests])
    assert "Say hello." in conversation
    assert "ipse proxy" not in conversation  # the hooks' output stayed out of the context
