"""The MCP server reads its session at every call, as Claude Code says it is now.

``claude -p --continue`` starts its MCP servers with ``CLAUDE_CODE_SESSION_ID`` naming a new
session, then switches to the resumed one: the requests carry the resumed id, the session file is
named after it, and Claude Code's registry of running sessions (``~/.claude/sessions/<pid>.json``,
the shape Claude Code 2.1.332 writes) says so. The server here is a real ``ipse mcp`` process,
started by this test process as Claude Code starts it (its parent holds the registry entry), and
the checkpoint's answer names the session the registry names at the moment of each call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipse.mcp._session import call_session
from ipse.transcript._formats.claude_code_session import project_folder

TRANSIENT = "0b5ffc16-dd86-4e9f-89fd-4dfbb5439bf1"  # the id Claude Code starts the server under
RESUMED = "10655967-58a4-4cd4-afad-d04386713f93"  # the session it then continues
LATER = "3c0a7e55-1111-4222-8333-444455556666"  # a session switched to later (``/resume``)
NOTES = {"done": ["read notes.txt"], "open": ["write the tokenizer"]}
HANDSHAKE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
}}  # fmt: skip


def _register(config: Path, session: str) -> None:
    """Claude Code's registry entry for the process running the server (this one)."""
    folder = config / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"pid": os.getpid(), "sessionId": session, "cwd": "/p", "procStart": "64985",
             "version": "2.1.332", "kind": "interactive", "entrypoint": "sdk-cli"}  # fmt: skip
    (folder / f"{os.getpid()}.json").write_text(json.dumps(entry))


def _session_file(config: Path, project: Path, session: str) -> None:
    """A Claude Code session file with one tool call and its result before the checkpoint."""
    folder = config / "projects" / project_folder(str(project.resolve()))
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "sessionId": session, "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "Read notes.txt"}},
        {"type": "assistant", "sessionId": session, "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_read", "name": "Read",
              "input": {"file_path": "notes.txt"}}]}},
        {"type": "user", "sessionId": session, "uuid": "u2", "parentUuid": "a1",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_read",
              "content": "parser 12.5 MB/s " * 50}]}},
    ]  # fmt: skip
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _call(process: subprocess.Popen[bytes], rid: int) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "micro_handoff", "arguments": NOTES,
        "_meta": {"claudecode/toolUseId": f"toolu_cp_{rid}", "progressToken": rid}}}  # fmt: skip
    process.stdin.write(json.dumps(call).encode() + b"\n")
    process.stdin.flush()
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    structured: dict[str, Any] = answer["result"]["structuredContent"]
    return structured


def test_a_continued_session_files_its_checkpoints_under_the_resumed_session(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    config = home / ".claude"
    _register(config, RESUMED)
    _session_file(config, project, RESUMED)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "IPSE_SESSION"))}
    env.update(HOME=str(home), IPSE_HOME=str(tmp_path / "ipse"), CLAUDECODE="1",
               CLAUDE_CODE_SESSION_ID=TRANSIENT)  # fmt: skip
    env.pop("IPSE_DATABASE_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "ipse", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=project,
        env=env,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(HANDSHAKE).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["result"]["serverInfo"]["name"] == "ipse"
        first = _call(process, 1)
        assert first["session"] == f"session:{RESUMED}"
        assert first["next_request_drops"] is not None  # the resumed session's file, read
        assert first["next_request_drops"]["tool_calls"] == 1
        _register(config, LATER)  # the harness switches sessions under the running server
        second = _call(process, 2)
        assert second["session"] == f"session:{LATER}"
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=60)


def test_a_session_given_outright_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": TRANSIENT, "IPSE_SESSION": "mine"}
    assert call_session("mine", None, environ) == "mine"
    # --session given on the command line, not the one the environment names
    environ = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": TRANSIENT}
    assert call_session("chosen", None, environ) == "chosen"


def test_without_a_registry_entry_the_session_at_start_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    environ = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": TRANSIENT}
    started = f"session:{TRANSIENT}"
    assert call_session(started, None, environ) == started


def test_a_codex_call_names_its_session_in_its_meta() -> None:
    thread = "019c8a53-0000-7000-8000-0000000000aa"
    meta = {"sessionId": thread, "threadId": thread}
    assert call_session("mcp-1f0e", meta, {}) == f"session:{thread}"
    assert call_session(f"session:{thread}", None, {"CODEX_THREAD_ID": thread}) == (
        f"session:{thread}"
    )
