"""A checkpoint is recognised however a harness delivers the call: by the library, the proxy's
rewrite and ``ipse handoff``, in every shape (direct, MCP-prefixed, Gemini's prefix, a Codex
deferred namespace, a call through Codex's code-mode ``exec`` tool, known from its answer).

The Codex shapes are those Codex CLI 0.169 sends: its code-mode tool is the freeform ``exec``
(a ``custom_tool_call`` whose ``input`` is JavaScript calling ``tools.<name>(...)``; its answer
a ``custom_tool_call_output``, a string or a list of ``input_text`` parts), and a deferred MCP
tool called directly is a ``function_call`` with a ``namespace``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ipse.cli.main import cli
from ipse.handoff._recognise import MARKER, checkpoint_name, is_checkpoint_call
from ipse.handoff._rewrite import checkpoint_calls, clear_cache
from ipse.handoff.wire import rewrite_request
from ipse.transcript._codec import codec
from ipse.transcript._model import ToolCall, ToolResult
from tests.transcript.responses import assistant_message, function_call, user_message

NOTES = {"done": ["read the parser"], "open": ["fix test_parse"]}
JS_NOTES = '{ done: ["read the parser"], open: ["fix test_parse"] }'
ANSWER = (
    "Checkpoint checkpoint-0123456789abcdef recorded for session mcp-1b2c. The next request "
    "drops 1 tool calls, 1 results and 0 thinking blocks (about 40 tokens)."
)


def exec_call(call_id: str, source: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "call_id": call_id, "name": "exec", "input": source}


def exec_output(call_id: str, output: Any = "Script completed") -> dict[str, Any]:
    return {"type": "custom_tool_call_output", "call_id": call_id, "output": output}


def _body(checkpoint: list[dict[str, Any]]) -> dict[str, Any]:
    """A Codex request: the human's prompt, one shell call answered, the checkpoint, an answer
    after it, and the human's next prompt."""
    return {
        "model": "gpt-5.6-codex",
        "instructions": "You are Codex.",
        "input": [
            user_message("Find the failing test."),
            function_call("call_1", "exec_command", '{"cmd":"pytest -q"}'),
            {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
            *checkpoint,
            assistant_message("Checkpoint taken; fixing the parser next."),
            user_message("Go on."),
        ],
        "tools": [{"type": "custom", "name": "exec", "description": "Run JavaScript."}],
        "stream": True,
    }


SHAPES: dict[str, list[dict[str, Any]]] = {
    "direct": [
        function_call("call_9", "micro_handoff", json.dumps(NOTES)),
        {"type": "function_call_output", "call_id": "call_9", "output": ANSWER},
    ],
    "mcp": [
        function_call("call_9", "mcp__ipse__micro_handoff", json.dumps(NOTES)),
        {"type": "function_call_output", "call_id": "call_9", "output": ANSWER},
    ],
    "namespace": [
        {
            "type": "function_call",
            "call_id": "call_9",
            "namespace": "mcp__ipse__",
            "name": "micro_handoff",
            "arguments": json.dumps(NOTES),
        },
        {"type": "function_call_output", "call_id": "call_9", "output": ANSWER},
    ],
    "exec": [
        exec_call("call_9", f"await tools.mcp__ipse__micro_handoff({JS_NOTES});"),
        exec_output("call_9"),
    ],
    "exec-bracket-pragma": [
        exec_call(
            "call_9",
            '// @exec: {"yield_time_ms": 10000}\n'
            f'const r = await tools["mcp__ipse__micro_handoff"]({JS_NOTES});\ntext(r);',
        ),
        exec_output("call_9", [{"type": "input_text", "text": "Script completed"}]),
    ],
    "exec-known-by-answer": [
        exec_call(
            "call_9",
            f'const name = "mcp__ipse__" + "micro_handoff";\n'
            f"text((await tools[name]({JS_NOTES})).content[0].text);",
        ),
        exec_output("call_9", [{"type": "input_text", "text": ANSWER}]),
    ],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_proxy_rewrite_cuts_at_every_shape(shape: str) -> None:
    clear_cache()
    body = _body(SHAPES[shape])
    out = rewrite_request(body, "openai-responses", use_cache=False)
    assert out.applied, out.reason
    assert out.anchor == "call_9" and out.removed_calls == 1
    assert out.body is not None
    items = out.body["input"]
    assert [i.get("call_id") for i in items if "call_id" in i] == ["call_9", "call_9"]
    assert items[-4:] == body["input"][-4:]  # the checkpoint, its answer, and what follows


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_library_finds_every_shape(shape: str) -> None:
    conversation = codec("openai-responses").read_body(_body(SHAPES[shape]))
    found = checkpoint_calls(conversation)
    assert [c.id for c in found] == ["call_9"]


def test_names() -> None:
    assert checkpoint_name("mcp_ipse_micro_handoff") == "micro_handoff"  # Gemini CLI
    assert checkpoint_name("mcp_my_server_micro_handoff") == "micro_handoff"
    assert checkpoint_name("micro_handoff", namespace="mcp__ipse__") == "micro_handoff"
    assert checkpoint_name("save", ("save",), namespace="mcp__x") == "save"
    assert checkpoint_name("mcp__micro_handoff") is None
    assert checkpoint_name("mcp_micro_handoff") is None
    assert checkpoint_name("micro_handoffs") is None


def test_what_is_not_a_checkpoint() -> None:
    def call(name: str, source: Any) -> ToolCall:
        return ToolCall("c", name, source, raw={"type": "custom_tool_call", "name": name})

    answer = ToolResult("c", ANSWER)
    # exec calling other tools; a shell command that names the tool or prints its answer
    assert not is_checkpoint_call(call("exec", "await tools.exec_command({cmd: 'ls'})"))
    assert not is_checkpoint_call(call("exec", "// tools.micro_handoff is for later\n"))
    grep = {"cmd": "grep -rn 'tools.mcp__ipse__micro_handoff(' src"}
    assert not is_checkpoint_call(call("exec_command", grep), result=answer)
    assert not is_checkpoint_call(call("shell", {"cmd": "cat log"}), result=answer)
    assert is_checkpoint_call(call("exec", "await tools.micro_handoff({done: [], open: []})"))
    assert is_checkpoint_call(call("exec", "x = 1"), result=answer)  # known by its answer


def test_the_mcp_answer_carries_the_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ipse.mcp._tools import Settings, tools

    monkeypatch.setenv("IPSE_HOME", str(tmp_path))
    tool = next(t for t in tools() if t.name == "micro_handoff")
    said = tool.run(Settings(session="session:abc", cwd=tmp_path), dict(NOTES))
    found = MARKER.search(said["text"])
    assert found is not None
    assert found.group(1) == said["checkpoint"] and found.group(2) == "session:abc"


def _claude_code_session(path: Path) -> None:
    def record(n: int, kind: str, content: Any, parent: int | None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message["id"] = f"msg_{n}"
        return {
            "type": kind,
            "uuid": f"u{n}",
            "parentUuid": f"u{parent}" if parent else None,
            "sessionId": "4d5611e5-0000-4000-8000-000000000001",
            "cwd": "/p",
            "timestamp": f"2026-12-01T10:00:0{n}Z",
            "message": message,
        }

    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
    notes = {
        "type": "tool_use",
        "id": "toolu_2",
        "name": "mcp__ipse__micro_handoff",
        "input": NOTES,
    }
    records = [
        record(1, "user", "Fix the parser.", None),
        record(2, "assistant", [use], 1),
        record(3, "user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}], 2),
        record(4, "assistant", [notes], 3),
        record(
            5, "user", [{"type": "tool_result", "tool_use_id": "toolu_2", "content": ANSWER}], 4
        ),
        record(6, "assistant", [{"type": "text", "text": "Fixing it now."}], 5),
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def _rollout(path: Path, checkpoint: list[dict[str, Any]]) -> None:
    lines: list[dict[str, Any]] = [
        {
            "timestamp": "2026-12-01T10:00:00Z",
            "type": "session_meta",
            "payload": {
                "id": "019c8a53-0000-7000-8000-000000000001",
                "cwd": "/p",
                "base_instructions": {"text": "You are Codex."},
            },
        },
        {
            "timestamp": "2026-12-01T10:00:00Z",
            "type": "turn_context",
            "payload": {"model": "gpt-5.6-codex"},
        },
    ]
    for item in _body(checkpoint)["input"]:
        lines.append(
            {"timestamp": "2026-12-01T10:00:01Z", "type": "response_item", "payload": item}
        )
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))


def test_ipse_handoff_finds_the_installed_tool_name_in_a_claude_code_session(
    tmp_path: Path,
) -> None:
    session = tmp_path / "4d5611e5-0000-4000-8000-000000000001.jsonl"
    _claude_code_session(session)
    done = CliRunner().invoke(cli, ["handoff", str(session), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["cut"]["kind"] == "checkpoint"
    assert document["removed"]["tool_calls"] == 1  # the Read call; the checkpoint stays


@pytest.mark.parametrize("shape", ["exec", "namespace", "exec-known-by-answer"])
def test_ipse_handoff_finds_a_codex_checkpoint(tmp_path: Path, shape: str) -> None:
    rollout = tmp_path / "rollout-2026-12-01T10-00-00-019c8a53.jsonl"
    _rollout(rollout, SHAPES[shape])
    out = tmp_path / "out.json"
    done = CliRunner().invoke(
        cli,
        ["handoff", str(rollout), "-o", str(out), "--no-archive", "--json"],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["cut"]["kind"] == "checkpoint"
    items = orjson.loads(out.read_bytes())["input"]
    assert "exec_command" not in {i.get("name") for i in items}
    assert [i.get("call_id") for i in items if "call_id" in i] == ["call_9", "call_9"]


SERVERS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,20}", fullmatch=True)


@given(server=SERVERS)
def test_any_server_name(server: str) -> None:
    assert checkpoint_name(f"mcp__{server}__micro_handoff") == "micro_handoff"
    assert checkpoint_name(f"mcp_{server}_micro_handoff") == "micro_handoff"
    assert checkpoint_name("micro_handoff", namespace=f"mcp__{server}") == "micro_handoff"
    source = f"await tools.mcp__{server.replace('-', '_')}__micro_handoff({JS_NOTES});"
    call = ToolCall("c", "exec", source, raw={"type": "custom_tool_call", "name": "exec"})
    assert is_checkpoint_call(call)
    assert checkpoint_name(f"mcp__{server}__micro_handoff_v2") is None
