"""The real Claude Code CLI journals its API requests in the session file: the requests ipse
rebuilds from the journal are the ones the scripted upstream received (system prompt without
the attribution block, tools, settings, messages up to how a one-block text is rendered)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ipse.prefix import analyze, read_requests
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.clients import claude_binary


def _rendered(messages: list[Any]) -> list[Any]:
    """Messages with one-block plain text content as the string it renders as."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and len(content) == 1 and set(content[0]) == {"type", "text"}:
            message = {**message, "content": content[0]["text"]}
        out.append(message)
    return out


def test_prefix_rebuilds_the_requests_claude_code_sent(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "proj"
    project.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    with anthropic_upstream(["First answer.", "Second answer."]) as upstream:
        env["ANTHROPIC_BASE_URL"] = upstream.url
        first = subprocess.run(
            [claude, "-p", "hello there", "--tools", ""],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert first.returncode == 0, first.stderr
        (session,) = (tmp_path / ".claude" / "projects").glob("*/*.jsonl")
        second = subprocess.run(
            [claude, "-p", "and again", "--resume", session.stem, "--tools", ""],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert second.returncode == 0, second.stderr
        sent = upstream.messages_requests()
    types = {json.loads(line).get("type") for line in session.read_text().splitlines()}
    if "api-request" not in types:  # an older CLI: nothing journaled, the placeholder stands
        assert all(r.body.get("cache_control") for r in read_requests(session).requests)
        return
    log = read_requests(session)
    assert len(log.requests) == len(sent) == 2
    for rebuilt, body in zip(log.requests, sent, strict=True):
        assert rebuilt.body["system"] == body["system"][1:]  # less the attribution block
        assert rebuilt.body.get("tools", []) == body["tools"]
        for key in ("model", "max_tokens", "thinking", "context_management", "output_config"):
            assert rebuilt.body.get(key) == body.get(key), key
        assert _rendered(rebuilt.body["messages"]) == _rendered(body["messages"])
    report = analyze(log.requests)
    assert report.warnings == [] or not any("fitted" in w for w in report.warnings)
