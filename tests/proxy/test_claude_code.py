"""The Claude Code CLI through the proxy: one real turn against llama.cpp, and a handoff of Claude
Code's own requests (mid-conversation ``system`` messages included) when the model calls the
checkpoint tool."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ipse.handoff import validate
from ipse.transcript._codec import codec
from tests.proxy.conftest import ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.clients import claude_binary


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ANTHROPIC_API_KEY": "sk-ant-claude-code-test",
        "ANTHROPIC_BASE_URL": base_url,
    }


def test_claude_code_through_the_proxy_to_llama(
    llama: str, proxy_factory: ProxyFactory, tmp_path: Path
) -> None:
    claude = claude_binary()
    with proxy_factory(llama) as proxy:
        done = subprocess.run(
            [
                claude,
                "-p",
                "Say hi.",
                "--bare",
                "--system-prompt",
                "Answer in three words.",
                "--tools",
                "",
            ],
            env=_env(tmp_path, proxy.url),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()
        proxy.settle()
        records = proxy.records()
        log = proxy.log.getvalue()
    turns = [r for r in records if r["request"]["url"].startswith("/v1/messages?beta=true")]
    assert turns and all(r["response"]["status"] == 200 for r in turns)
    headers = turns[0]["request"]["headers"]
    assert headers["x-api-key"] == "***" and "anthropic-beta" in headers
    assert turns[0]["ipse"]["conversation"].startswith("session:")
    assert "sk-ant-claude-code-test" not in log


def test_claude_code_request_is_handed_off(proxy_factory: ProxyFactory, tmp_path: Path) -> None:
    claude = claude_binary()
    replies: list[Any] = [
        {
            "text": "Reading the file.",
            "tool_use": {"id": "toolu_read1", "name": "Read", "input": {"file_path": "/etc/x"}},
        },
        {
            "text": "Saving a checkpoint.",
            "tool_use": {
                "id": "toolu_cp1",
                "name": "micro_handoff",
                "input": {"notes": "the file was read"},
            },
        },
        "All done.",
    ]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        done = subprocess.run(
            [claude, "-p", "Read the file and report.", "--bare", "--tools", ""],
            env=_env(tmp_path, proxy.url),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        assert "All done." in done.stdout
        proxy.settle()
        log = proxy.log.getvalue()
    turns = upstream.messages_requests()
    assert len(turns) == 3
    before, after = turns[1], turns[2]
    roles = [m["role"] for m in after["messages"]]
    assert "system" in roles  # Claude Code's mid-conversation system message, kept
    assert [m for m in after["messages"] if m["role"] == "system"] == [
        m for m in before["messages"] if m["role"] == "system"
    ]
    ids = [
        b.get("id")
        for m in after["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    assert ids == ["toolu_cp1"]
    assert validate(codec("anthropic").read_body(after)) == []
    text = str(after["messages"])
    assert "Read the file and report." in text and "Reading the file." in text
    assert "handoff at toolu_cp1" in log
