"""Gemini CLI 0.61 sessions: the ``<session_context>`` it injects is the harness's text, one
prompt is one human turn, and the function responses it records again as user messages are
tool results (or nothing, when the model's record already holds them), never empty user
messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipse.transcript import Text, ToolResult, detect, read_conversation
from ipse.transcript._model import Origin
from tests.conftest import CliRun
from tests.transcript import harness_cases as cases


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    return cases.write_jsonl(tmp_path / "session-2026-03-02T10-00-6f0c.jsonl", records)


def test_session_context_is_harness_text_and_one_prompt_one_turn(
    tmp_path: Path, cli: CliRun
) -> None:
    path = _write(tmp_path, cases.gemini_061_session_jsonl())
    assert detect(path) == "gemini-cli"
    conversation = read_conversation(path)
    texts = [
        (b.origin, b.text) for m in conversation.messages for b in m.blocks if isinstance(b, Text)
    ]
    assert [t for o, t in texts if o is Origin.HUMAN] == [cases.HUMAN]
    assert [t for o, t in texts if o is Origin.HARNESS] == [cases.SESSION_CONTEXT]
    assert all(m.blocks for m in conversation.messages)  # no empty user message
    assert [m.role for m in conversation.messages] == [
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    report = json.loads(cli("inspect", str(path), "--json").stdout)
    assert report["turns"] == 1 and report["tool_calls"] == 2
    kinds = report["tokens"]["by_kind"]
    assert kinds["harness_text"] > kinds["human_text"] > 0


def test_function_responses_are_the_results_when_the_calls_carry_none(tmp_path: Path) -> None:
    records = cases.gemini_061_session_jsonl()
    for record in records:
        for call in record.get("toolCalls", []):
            call["result"] = None  # (a call recorded before it finished)
    conversation = read_conversation(_write(tmp_path, records))
    results = [b for m in conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert [(r.call_id, r.content) for r in results] == [
        ("read_file-3", "# proj\nA parser."),
        ("read_file-6", "def parse(): ..."),
    ]
    assert sum(1 for m in conversation.messages if m.role == "user") == 2


def test_a_response_to_no_recorded_call_is_no_result(tmp_path: Path, cli: CliRun) -> None:
    records = cases.gemini_061_session_jsonl()
    ghost = {"functionResponse": {"id": "ghost-1", "name": "x", "response": {"output": "?"}}}
    records.insert(
        3,
        {
            "id": "r-ghost",
            "timestamp": "2026-03-02T10:00:02.500Z",
            "type": "user",
            "content": [ghost],
        },
    )
    path = _write(tmp_path, records)
    conversation = read_conversation(path)
    ids = [b.call_id for m in conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert ids == ["read_file-3", "read_file-6"]
    assert cli("inspect", str(path)).returncode == 0
