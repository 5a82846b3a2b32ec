"""One session key across the MCP server, the proxy and ``ipse handoff``: ``recall`` with a
checkpoint's id finds what the handoff at that checkpoint removed, whichever part removed it.

The MCP server records the checkpoint (its real tool, real SQLite archive); the proxy's part is
the library call the proxy makes (`conversation_key` from the request's headers, then
`rewrite_request` archiving under it); ``ipse handoff`` runs in process on a Codex rollout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ipse._sessions import mcp_session, meta_session, request_session, session_key
from ipse.archive import open_archive
from ipse.cli.main import cli
from ipse.handoff._checkpoint import checkpoint_items
from ipse.handoff._rewrite import clear_cache, conversation_key
from ipse.handoff.wire import rewrite_request
from ipse.mcp._tools import Settings, tools
from tests.transcript.responses import assistant_message, function_call, user_message

CODEX_SESSION = "019c8a53-0000-7000-8000-0000000000aa"
NOTES = {"done": ["ran the suite"], "open": ["fix test_parse"]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IPSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IPSE_DATABASE_URL", raising=False)
    for name in ("IPSE_SESSION", "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "CODEX_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    clear_cache()
    return tmp_path


def _tool(name: str) -> Any:
    return next(t for t in tools() if t.name == name)


def _checkpoint(session: str, cwd: Path) -> dict[str, Any]:
    """What the MCP server answers to the checkpoint call."""
    return dict(_tool("micro_handoff").run(Settings(session=session, cwd=cwd), dict(NOTES)))


def _recall(checkpoint: str, cwd: Path) -> str:
    return str(_tool("recall").run(Settings(cwd=cwd), {"checkpoint": checkpoint})["text"])


def _codex_body(answer: str) -> dict[str, Any]:
    return {
        "model": "gpt-5.6-codex",
        "instructions": "You are Codex.",
        "input": [
            user_message("Find the failing test."),
            function_call("call_1", "exec_command", '{"cmd":"pytest -q"}'),
            {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
            {
                "type": "function_call",
                "call_id": "call_2",
                "namespace": "mcp__ipse__",
                "name": "micro_handoff",
                "arguments": json.dumps(NOTES),
            },
            {"type": "function_call_output", "call_id": "call_2", "output": answer},
            assistant_message("Checkpoint taken."),
        ],
        "prompt_cache_key": CODEX_SESSION,
    }


def _proxy(body: dict[str, Any], headers: dict[str, str]) -> Any:
    """What the proxy does with a request: key it, hand it off, archive under the key."""
    archive = open_archive()
    try:
        key = conversation_key(headers, body, "openai-responses")
        out = rewrite_request(body, "openai-responses", archive=archive, session=key)
    finally:
        archive.close()
    assert out.applied and out.archived == 1, out
    return out


def _removed(checkpoint: str) -> list[str]:
    archive = open_archive()
    try:
        return [i.tool for i in checkpoint_items(archive, checkpoint)[1]]
    finally:
        archive.close()


def test_codex_headers_and_its_mcp_server_give_one_key(home: Path) -> None:
    headers = {"session-id": CODEX_SESSION, "thread-id": CODEX_SESSION}
    key = mcp_session({"CODEX_THREAD_ID": CODEX_SESSION})
    assert key == request_session(headers) == f"session:{CODEX_SESSION}"
    said = _checkpoint(key, home)
    _proxy(_codex_body("Checkpoint recorded."), headers)
    assert _removed(said["checkpoint"]) == ["exec_command"]
    assert "exec_command" in _recall(said["checkpoint"], home)


def test_a_checkpoint_recorded_without_the_harness_id_still_finds_the_handoff(home: Path) -> None:
    """The MCP server could not learn Codex's session (a fresh ``mcp-`` key); the checkpoint's
    answer names that key, and the proxy's handoff at it archives there."""
    key = mcp_session({})
    assert key.startswith("mcp-")
    said = _checkpoint(key, home)
    out = _proxy(_codex_body(said["text"]), {"session-id": CODEX_SESSION})
    assert out.session == key
    assert _removed(said["checkpoint"]) == ["exec_command"]
    assert "1 items" in _recall(said["checkpoint"], home)


def test_the_request_s_own_session_wins_over_what_the_answer_claims(home: Path) -> None:
    """A server started under one session id while the harness went on in another (``claude -p
    --continue``): its answer names the first, the request's header the second. What the
    handoff removed is filed under the header's session, the conversation's own."""
    started, resumed = "session:0b5ffc16-started", "019c8a53-0000-7000-8000-0000000000bb"
    said = _checkpoint(started, home)
    out = _proxy(_codex_body(said["text"]), {"session-id": resumed})
    assert out.session == f"session:{resumed}"
    archive = open_archive()
    try:
        assert [i.tool for i in archive.items(f"session:{resumed}")] == ["exec_command"]
        assert archive.items(started) and all(
            i.tool != "exec_command" for i in archive.items(started)
        )
    finally:
        archive.close()


def test_claude_code_keys_agree(home: Path) -> None:
    claude = "4d5611e5-0000-4000-8000-000000000001"
    key = mcp_session({"CLAUDE_CODE_SESSION_ID": claude})
    assert key == request_session({"X-Claude-Code-Session-Id": claude}) == f"session:{claude}"
    user_id = json.dumps({"device_id": "d", "session_id": claude})
    assert request_session({}, {"metadata": {"user_id": user_id}}) == key


def test_ipse_handoff_on_the_rollout_files_under_the_same_key(home: Path) -> None:
    """``ipse handoff`` on the rollout archives where the proxy would: the session the
    checkpoint was recorded under, else the rollout's own session id (Codex's header)."""
    for recorded in (True, False):
        key = mcp_session({} if recorded else {"CODEX_THREAD_ID": CODEX_SESSION})
        said = _checkpoint(key, home)
        rollout = home / f"rollout-{recorded}.jsonl"
        lines = [
            {
                "timestamp": "2026-12-01T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": CODEX_SESSION, "base_instructions": {"text": "Codex."}},
            }
        ]
        answer = said["text"] if recorded else "Checkpoint recorded."
        lines += [
            {"timestamp": "2026-12-01T10:00:01Z", "type": "response_item", "payload": i}
            for i in _codex_body(answer)["input"]
        ]
        rollout.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        args = ["handoff", str(rollout), "-o", str(home / "out.json"), "--json"]
        done = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert done.exit_code == 0, done.output
        document = json.loads(done.stdout)
        assert document["session"] == key and document["archived"] == 1
        assert _removed(said["checkpoint"]) == ["exec_command"]


def test_keys() -> None:
    assert session_key(" abc ") == "session:abc"
    assert session_key("session:abc") == "session:abc"
    assert session_key("") is None and session_key("a\nb") is None and session_key(3) is None
    meta = {"x-codex-turn-metadata": json.dumps({"session_id": "s1", "turn_id": "t"})}
    assert meta_session(meta) == "session:s1"
    assert mcp_session({}, meta) == "session:s1"
    assert mcp_session({"IPSE_SESSION": "mine"}, meta) == "mine"


def test_the_mcp_server_takes_codex_session_from_the_call(home: Path) -> None:
    """Codex gives its MCP servers no session in their environment; each tool call's ``_meta``
    names it (the shape Codex CLI 0.169 sends)."""
    from ipse.mcp._tools import for_call

    meta = {
        "callId": "call_ck1",
        "x-codex-turn-metadata": {
            "session_id": CODEX_SESSION,
            "thread_id": CODEX_SESSION,
            "turn_id": "t1",
            "codex_version": "0.169.0",
        },
        "threadId": CODEX_SESSION,
        "sessionId": CODEX_SESSION,
        "progressToken": 1,
    }
    fresh = Settings(session=mcp_session({}), cwd=home)
    assert for_call(fresh, meta).session == f"session:{CODEX_SESSION}"
    given = Settings(session="mine", cwd=home)
    assert for_call(given, meta) is given  # IPSE_SESSION, --session: as given
    assert for_call(fresh, None) is fresh
