"""Small sessions for the probe tests: Anthropic bodies, and Claude Code JSONL files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipse.probe import Timeline
from ipse.transcript import Conversation
from ipse.transcript.formats import anthropic


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
    path: Path, turns: list[dict[str, Any]], *, compact_after: int | None = None, summary: str = ""
) -> Path:
    """A Claude Code session file of ``turns`` (user/assistant messages, Anthropic-shaped), with
    a compaction (boundary record and summary) after turn ``compact_after`` when given."""
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
        if compact_after == number:
            records.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": "b1",
                    "parentUuid": None,
                    "logicalParentUuid": uuid,
                    "sessionId": "s1",
                    "compactMetadata": {"trigger": "auto"},
                }
            )
            records.append(
                {
                    "type": "user",
                    "uuid": "sum",
                    "parentUuid": "b1",
                    "sessionId": "s1",
                    "isSidechain": False,
                    "isCompactSummary": True,
                    "message": {"role": "user", "content": summary},
                }
            )
            parent = "sum"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
