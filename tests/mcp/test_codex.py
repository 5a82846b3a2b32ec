"""The real Codex CLI with ``ipse mcp`` as ``ipse install`` registers it: Codex sends its first
request without waiting for MCP servers unless the entry says ``required = true``, so with the
entry install writes the tools are in the first request even when the server answers late
(a server started two seconds late stands in for a loaded machine: without the key the request
went out with Codex's own tools alone); and a server that cannot start stops Codex, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ipse
from ipse.agents._commands import launcher
from tests.support.clients import codex_binary
from tests.support.openai_upstream import openai_upstream

SOURCE = Path(ipse.__file__).resolve().parents[1]
OURS = [
    "micro_handoff",
    "recall",
    "archive_list",
    "state_resume",
    "state_next",
    "state_invariant",
    "state_checkpoint",
]
LATE_S = 2  # how late the server starts


def late_server(folder: Path, seconds: float) -> Path:
    """A command that starts this checkout's ``ipse`` ``seconds`` late (Codex hands its
    servers a few variables only, so the checkout's path is set here)."""
    command, _ = launcher()
    script = folder / "late-ipse"
    script.write_text(f'#!/bin/sh\nsleep {seconds}\nPYTHONPATH="{SOURCE}" exec "{command}" "$@"\n')
    script.chmod(0o755)
    return script


def test_the_first_request_carries_the_tools_of_a_late_server(
    tmp_path: Path, _isolated_home: Path
) -> None:
    codex = codex_binary()
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-test",
    }
    with openai_upstream(["Hi."]) as upstream:
        config = codex_home / "config.toml"
        config.write_text(
            'model = "gpt-5"\nmodel_provider = "scripted"\n\n'
            "[model_providers.scripted]\n"
            f'name = "scripted"\nbase_url = "{upstream.url}/v1"\n'
            'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'
        )
        installed = subprocess.run(
            [sys.executable, "-m", "ipse", "install", "--agent", "codex", "--user"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert installed.returncode == 0, installed.stderr
        command, _ = launcher()
        text = config.read_text()
        assert f"command = {json.dumps(command)}" in text, text
        late = late_server(tmp_path, LATE_S)
        config.write_text(text.replace(json.dumps(command), json.dumps(str(late)), 1))
        done = subprocess.run(
            [codex, "exec", "--strict-config", "--skip-git-repo-check", "Say hi."],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        bodies = upstream.bodies("/responses")
    assert done.returncode == 0, done.stderr
    first = bodies[0].get("tools", [])
    spaces = [t for t in first if t.get("name") == "mcp__ipse"]
    assert spaces, [t.get("name") for t in first]
    assert sorted(t["name"] for t in spaces[0]["tools"]) == sorted(OURS)


def test_a_server_that_cannot_start_stops_codex_saying_why(
    tmp_path: Path, _isolated_home: Path
) -> None:
    # the other side of required: no session starts without ipse's tools, and the reason is
    # one line naming the server (rather than a session that silently lacks them)
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-test",
    }
    with openai_upstream(["Hi."]) as upstream:
        config = codex_home / "config.toml"
        config.write_text(
            f'model = "gpt-5"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{upstream.url}/v1"\nwire_api = "responses"\n'
            'env_key = "OPENAI_API_KEY"\n'
        )
        installed = subprocess.run(
            [sys.executable, "-m", "ipse", "install", "--agent", "codex", "--user"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert installed.returncode == 0, installed.stderr
        command, _ = launcher()
        broken = tmp_path / "broken-ipse"
        broken.write_text("#!/bin/sh\necho 'ipse: error: cannot start' >&2\nexit 2\n")
        broken.chmod(0o755)
        config.write_text(config.read_text().replace(json.dumps(command), json.dumps(str(broken))))
        done = subprocess.run(
            [codex_binary(), "exec", "--strict-config", "--skip-git-repo-check", "Say hi."],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        bodies = upstream.bodies("/responses")
    assert done.returncode != 0
    assert "required MCP servers failed to initialize: ipse" in done.stderr, done.stderr[-2000:]
    assert bodies == []  # nothing was sent without the tools
