"""Small sessions for the probe tests: Anthropic bodies, and Claude Code JSONL files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipse.probe._timeline import Timeline
from ipse.transcript import Conversation
from ipse.transcript._formats import anthropic


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str = "Bash", **data: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": data}


def result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def conversation(*messages: dict[str, Any]) -> Conversation:
    return anthropic.read_body({"model": "claude-x", "messages": list(messages)})


def line(*messages: dict[str, Any]) -> Timeline:
    c = conversation(*messages)
    return Timeline(c.messages, (), c.dialect, c.system, "anthropic")


def write_session(
    path: Path,
    turns: list[dict[str, Any]],
    *,
    compact_after: int | None = None,
    summary: str = "",
    compactions: dict[int, str] | None = None,
) -> Path:
    """A Claude Code session file of ``turns`` (user/assistant messages, Anthropic-shaped), with
    a compaction (boundary record and summary) after turn ``compact_after`` when given, and one
    after each turn ``compactions`` names (with its summary)."""
    after = dict(compactions or {})
    if compact_after is not None:
        after[compact_after] = summary
    records: list[dict[str, Any]] = []
    parent: str | None = None
    for number, turn in enumerate(turns):
        uuid = f"u{number}"
        record: dict[str, Any] = {
            "type": turn["role"],
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "isSidechain": False,
            "timestamp": f"2026-01-01T00:00:{number % 60:02d}Z",
            "message": dict(turn),
        }
        if turn["role"] == "assistant":
            record["message"] = {
                "id": f"m{number}",
                "model": "claude-test",
                "usage": {"input_tokens": 1},
                **turn,
            }
        records.append(record)
        parent = uuid
        if number in after:
            records += _compaction(number, uuid, after[number])
            parent = f"sum{number}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _compaction(number: int, parent: str, summary: str) -> list[dict[str, Any]]:
    """The boundary record and the summary Claude Code writes when it compacts."""
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": f"b{number}",
        "parentUuid": None,
        "logicalParentUuid": parent,
        "sessionId": "s1",
        "compactMetadata": {"trigger": "auto"},
    }
    kept = {
        "type": "user",
        "uuid": f"sum{number}",
        "parentUuid": f"b{number}",
        "sessionId": "s1",
        "isSidechain": False,
        "isCompactSummary": True,
        "message": {"role": "user", "content": summary},
    }
    return [boundary, kept]
