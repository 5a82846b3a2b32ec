"""``ipse handoff --to claude-code``: the real Claude Code CLI resumes the written session, and
the request it sends carries exactly the handed-off messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ipse.transcript import load
from ipse.transcript._model import Text
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.clients import claude_binary

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_heavy.jsonl"
HANDOFF = ["--at", "end", "--to", "claude-code", "--cwd"]  # (then the project folder)


def _normalised(content: Any) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


def test_claude_code_resumes_the_handed_off_session(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "proj dir"
    project.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    original = EXAMPLE.read_bytes()
    made = subprocess.run(
        [sys.executable, "-m", "ipse", "handoff", str(EXAMPLE), *HANDOFF, str(project), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    document = json.loads(made.stdout)
    session_id = document["claude_code"]["session"]
    written = Path(document["claude_code"]["path"])
    assert written.parent == tmp_path / ".claude" / "projects" / "-".join(
        ["", *str(project).strip("/").replace(" ", "/").split("/")]
    ) or written.parent.name == "".join(c if c.isalnum() else "-" for c in str(project))
    assert EXAMPLE.read_bytes() == original  # the input is never touched
    records = [json.loads(line) for line in written.read_text().splitlines()]
    handed_off = [record["message"] for record in records]
    with anthropic_upstream(["Resumed."]) as upstream:
        resumed = subprocess.run(
            [claude, "-p", "What did we do?", "--resume", session_id, "--bare", "--tools", ""],
            env={**env, "ANTHROPIC_BASE_URL": upstream.url},
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert "Resumed." in resumed.stdout
        sent = upstream.messages_requests()[-1]["messages"]
    *history, newest = sent
    assert _normalised(newest["content"]) == [{"type": "text", "text": "What did we do?"}]
    expected = [{"role": m["role"], "content": _normalised(m["content"])} for m in handed_off]
    assert all(b["type"] == "text" for m in expected for b in m["content"])  # no tool traffic
    got = [{"role": m["role"], "content": _normalised(m["content"])} for m in history]
    if expected[-1]["role"] == "user":  # Claude Code answers an unanswered turn before resuming
        assert got[-1]["role"] == "assistant"
        got = got[:-1]
    assert got == expected
    authored = [
        b.text for m in load(EXAMPLE).current().messages for b in m.blocks if isinstance(b, Text)
    ]
    carried = "\n".join(b["text"] for m in history for b in _normalised(m["content"]))
    for text in authored:
        for line in text.splitlines():
            assert line in carried
