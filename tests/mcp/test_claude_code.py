"""The real Claude Code CLI with ``ipse mcp``: it finds the installed server healthy, and a model
(the scripted upstream) that calls ``mcp__ipse__micro_handoff`` gets its notes stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ipse.archive import open_archive
from tests.support.anthropic_upstream import Reply, anthropic_upstream
from tests.support.clients import claude_binary

NOTES = {
    "done": ["measured the parser on 1 MB"],
    "open": ["write the tokenizer"],
    "claims": [{"claim": "12 s on 1 MB", "status": "measured", "evidence": "time ./parse"}],
}


def _env(tmp_path: Path, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "IPSE_HOME": str(home),
    }


def test_claude_code_lists_the_installed_server_as_connected(
    tmp_path: Path, _isolated_home: Path
) -> None:
    claude = claude_binary()
    env = _env(tmp_path, _isolated_home)
    env.pop("CLAUDE_CONFIG_DIR")  # user scope: ~/.claude.json under HOME
    installed = subprocess.run(
        [sys.executable, "-m", "ipse", "install", "--agent", "claude-code", "--user"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    bare = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    bare["PATH"] = "/usr/bin:/bin"  # the user's environment is not active
    listed = subprocess.run(
        [claude, "mcp", "list"],
        env=bare,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("ipse:"))
    assert "Connected" in line, listed.stdout


def test_claude_code_calls_micro_handoff_and_the_notes_are_stored(
    tmp_path: Path, _isolated_home: Path
) -> None:
    claude = claude_binary()
    env = _env(tmp_path, _isolated_home)
    config = tmp_path / "mcp.json"
    command = [sys.executable, "-m", "ipse", "mcp"]
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ipse": {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
                }
            }
        )
    )
    call = {"id": "toolu_scripted_01", "name": "mcp__ipse__micro_handoff", "input": NOTES}
    replies: list[Reply] = [{"text": "Checkpoint.", "tool_use": call}, "Noted."]
    with anthropic_upstream(replies) as upstream:
        done = subprocess.run(
            [
                claude,
                "-p",
                "Record a checkpoint.",
                "--bare",
                "--mcp-config",
                str(config),
                "--strict-mcp-config",
                "--allowedTools",
                "mcp__ipse__micro_handoff",
            ],
            env={**env, "ANTHROPIC_BASE_URL": upstream.url, "ENABLE_TOOL_SEARCH": "false"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        requests = upstream.messages_requests()
    assert done.returncode == 0, done.stderr
    assert "Noted." in done.stdout
    tools = {t["name"]: t for t in requests[0].get("tools", [])}
    assert "mcp__ipse__micro_handoff" in tools
    result = _tool_result(requests[-1]["messages"])
    assert "Checkpoint checkpoint-" in result and "recorded for session" in result
    archive = open_archive()
    try:
        sessions = archive.sessions()
        [(session, count)] = sessions
        [item] = archive.items(session)
        recalled = archive.recall(item.id, session)
    finally:
        archive.close()
    assert count == 1 and item.kind == "checkpoint"
    assert json.loads(recalled.call)["input"] == NOTES
    # Claude Code hands its session id to the server: the notes are under the key the proxy uses
    claude_session = json.loads(requests[-1]["metadata"]["user_id"])["session_id"]
    assert session == f"session:{claude_session}"
    # when Claude Code has written the transcript by the time of the call, the drop is measured
    # there (nothing to drop in this one-turn session); a later write leaves it unknown
    drops = json.loads(result)["next_request_drops"]
    assert drops is None or drops["tool_calls"] == 0


def _tool_result(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return "".join(str(b.get("text", "")) for b in inner)
                return str(inner)
    raise AssertionError("no tool result in the request")


def test_the_first_request_carries_the_tools_of_a_late_server(
    tmp_path: Path, _isolated_home: Path
) -> None:
    # Claude Code starts MCP servers without waiting and defers their tools behind tool search:
    # the first request lacked ipse's tools, and loading them later changes the tools array
    # mid-session (the prompt cache breaks). The entry install writes says alwaysLoad: Claude
    # Code holds the first prompt until the server is connected and sends the tools' schemas
    # from the start. Installed with --user, as a user runs it (tool search left as it is), and
    # started two seconds late as on a loaded machine.
    claude = claude_binary()
    env = _env(tmp_path, _isolated_home)
    env.pop("CLAUDE_CONFIG_DIR")  # user scope: ~/.claude.json under HOME
    env.pop("ENABLE_TOOL_SEARCH", None)
    installed = subprocess.run(
        [sys.executable, "-m", "ipse", "install", "--agent", "claude-code", "--user"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    config = tmp_path / ".claude.json"
    document = json.loads(config.read_text())
    entry = document["mcpServers"]["ipse"]
    late = tmp_path / "late-ipse"
    late.write_text(f'#!/bin/sh\nsleep 2\nexec "{entry["command"]}" "$@"\n')
    late.chmod(0o755)
    entry["command"] = str(late)
    config.write_text(json.dumps(document))
    call = {"id": "toolu_scripted_01", "name": "mcp__ipse__micro_handoff", "input": NOTES}
    replies: list[Reply] = [{"text": "Checkpoint.", "tool_use": call}, "Noted."]
    with anthropic_upstream(replies) as upstream:
        done = subprocess.run(
            [claude, "-p", "Record a checkpoint.", "--allowedTools", "mcp__ipse__micro_handoff"],
            env={**env, "ANTHROPIC_BASE_URL": upstream.url},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        requests = upstream.messages_requests()
    assert done.returncode == 0, done.stderr
    first = [t["name"] for t in requests[0].get("tools", [])]
    ours = sorted(n for n in first if n.startswith("mcp__ipse__"))
    assert ours == sorted(
        [
            "mcp__ipse__micro_handoff",
            "mcp__ipse__recall",
            "mcp__ipse__archive_list",
            "mcp__ipse__state_resume",
            "mcp__ipse__state_next",
            "mcp__ipse__state_invariant",
            "mcp__ipse__state_checkpoint",
        ]
    ), first
    arrays = {json.dumps(r.get("tools")) for r in requests}
    assert len(requests) >= 2 and len(arrays) == 1  # the same tools in every request
    assert "Checkpoint checkpoint-" in _tool_result(requests[-1]["messages"])
