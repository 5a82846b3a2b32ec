"""Hand-built request sequences for the prefix tests."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from ipse.prefix._report import PrefixReport, analyze
from ipse.prefix._requests import Request

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
MODEL = "claude-sonnet-4-5-20250929"
SYSTEM_TEXT = "You are a careful engineer. " + "Follow the house style in every answer. " * 150

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file from the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "run",
        "description": "Run a shell command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
        },
    },
    {
        "name": "search",
        "description": "Search the code.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
]


def turn_messages(turns: int) -> list[dict[str, Any]]:
    """``turns`` user/assistant exchanges followed by one new user message."""
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"question {n}: " + "details " * 40})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"answer {n}: " + "reasoning " * 30},
                    {"type": "tool_use", "id": f"t{n}", "name": "run", "input": {"command": "ls"}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}],
            }
        )
        messages.append({"role": "assistant", "content": f"done {n}"})
    messages.append({"role": "user", "content": f"question {turns}: " + "details " * 40})
    return messages


def body(turns: int, **overrides: Any) -> dict[str, Any]:
    """A request of a growing conversation, breakpoints on the system prompt and last block."""
    messages = turn_messages(turns)
    last = messages[-1]
    last["content"] = [
        {"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}
    ]
    result: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "tools": copy.deepcopy(TOOLS),
        "system": [{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
    }
    result.update(overrides)
    return result


def requests(
    bodies: list[dict[str, Any]], gaps: list[float] | None = None, *, times: bool = True
) -> list[Request]:
    """Requests ``gaps`` seconds apart (10 s by default), each answered 2 s after it was sent."""
    out = []
    t = T0
    for i, b in enumerate(bodies):
        if i:
            t += timedelta(seconds=gaps[i - 1] if gaps else 10)
        out.append(
            Request(
                i,
                b,
                "anthropic",
                t if times else None,
                t + timedelta(seconds=2) if times else None,
                None,
                f"request {i}",
            )
        )
    return out


def run(bodies: list[dict[str, Any]], **kwargs: Any) -> PrefixReport:
    gaps = kwargs.pop("gaps", None)
    times = kwargs.pop("times", True)
    return analyze(requests(bodies, gaps, times=times), tokenizer="bytes", **kwargs)
