"""End to end: Claude Code with ``ipse mcp`` (``--mcp-config``) through the ipse proxy to a
scripted upstream. The model reads a file, then calls ``mcp__ipse__micro_handoff``; the server
stores the notes, and the next request the upstream receives is the handed-off one: the read is
gone, every authored word and the checkpoint call stay, and ``recall`` gives the read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("httpx")

from ipse.archive import open_archive
from ipse.handoff import validate
from ipse.handoff._checkpoint import checkpoint_items
from ipse.transcript._codec import codec
from tests.proxy.conftest import ProxyFactory
from tests.proxy.conftest import proxy_factory as proxy_factory  # the fixture, shared
from tests.support.clients import claude_binary

NOTES = {
    "done": ["read /etc/x: it holds the parser settings"],
    "open": ["report the settings"],
    "claims": [{"claim": "/etc/x is 3 lines", "status": "measured", "evidence": "Read"}],
}


def _tool_uses(body: dict[str, Any]) -> list[str]:
    return [
        b["id"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]


def test_the_request_after_the_mcp_checkpoint_is_handed_off(
    proxy_factory: ProxyFactory, tmp_path: Path, _isolated_home: Path
) -> None:
    from tests.support.anthropic_upstream import anthropic_upstream

    claude = claude_binary()
    replies: list[Any] = [
        {
            "text": "Reading the file.",
            "tool_use": {"id": "toolu_read1", "name": "Read", "input": {"file_path": "/etc/x"}},
        },
        {
            "text": "The file holds the parser settings; saving a checkpoint.",
            "tool_use": {"id": "toolu_cp1", "name": "mcp__ipse__micro_handoff", "input": NOTES},
        },
        "All done.",
    ]
    with anthropic_upstream(replies) as upstream, proxy_factory(upstream.url) as proxy:
        config = tmp_path / "mcp.json"
        server = {
            "type": "stdio",
            "command": sys.executable,
            "args": ["-m", "ipse", "mcp", "--archive", proxy.store],
            "env": {},
        }
        config.write_text(json.dumps({"mcpServers": {"ipse": server}}))
        env = {
            **os.environ,
            "HOME": str(tmp_path),
            "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "ANTHROPIC_API_KEY": "sk-ant-mcp-test",
            "ANTHROPIC_BASE_URL": proxy.url,
            "ENABLE_TOOL_SEARCH": "false",
            "IPSE_HOME": str(_isolated_home),
        }
        done = subprocess.run(
            [
                claude,
                "-p",
                "Read the file and report.",
                "--bare",
                "--tools",
                "",
                "--mcp-config",
                str(config),
                "--strict-mcp-config",
                "--allowedTools",
                "mcp__ipse__micro_handoff",
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        assert "All done." in done.stdout
        proxy.settle()
    turns = upstream.messages_requests()
    assert len(turns) == 3
    before, after = turns[1], turns[2]
    assert _tool_uses(before) == ["toolu_read1", "toolu_cp1"][: len(_tool_uses(before))]
    assert _tool_uses(after) == ["toolu_cp1"]  # the read and its result are gone
    assert validate(codec("anthropic").read_body(after)) == []
    text = json.dumps(after["messages"])
    for said in (
        "Read the file and report.",
        "Reading the file.",
        "The file holds the parser settings; saving a checkpoint.",
    ):
        assert said in text
    session = "session:" + json.loads(after["metadata"]["user_id"])["session_id"]
    archive = open_archive(proxy.store)
    try:
        [checkpoint] = [i for i in archive.items(session) if i.kind == "checkpoint"]
        notes = json.loads(archive.recall(checkpoint.id, session).call)["input"]
        _, removed = checkpoint_items(archive, checkpoint.id)
    finally:
        archive.close()
    assert notes == NOTES  # the MCP server stored the checkpoint's notes
    # the proxy archived the read under the same session: recall by checkpoint lists it
    assert [i.id for i in removed] == ["toolu_read1"]
