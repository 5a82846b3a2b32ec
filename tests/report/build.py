"""A small generated request log (JSONL of exchanges with usage) for the report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOSTILE_TOOL = "Bash</script><script>alert(1)</script>[/]\x1b[2J"


def exchange(messages: list[dict[str, Any]], usage: dict[str, int], at: int) -> dict[str, Any]:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "system": "Be brief.",
        "tools": [{"name": HOSTILE_TOOL, "description": "run", "input_schema": {}}],
        "messages": messages,
    }
    return {
        "time": f"2026-01-01T00:00:{at:02d}Z",
        "request": {
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages",
            "body": body,
        },
        "response": {"status": 200, "body": {"type": "message", "usage": usage}},
    }


def write_log(path: Path, turns: int = 8) -> Path:
    """A conversation that grows by one tool exchange per request, then a human turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    lines = []
    read = 0
    for turn in range(turns):
        total = 200 + 150 * turn
        usage = {
            "input_tokens": total - read,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": 0,
        }
        lines.append(json.dumps(exchange(list(messages), usage, turn)))
        read = total
        call = f"toolu_{turn:02d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {turn}: running the tests."},
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": HOSTILE_TOOL,
                        "input": {"cmd": "pytest"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call, "content": "F" * 400 + f" {turn}"}
                ],
            }
        )
        if turn == turns // 2:
            messages.append({"role": "assistant", "content": "Found it: a stale fixture."})
            messages.append({"role": "user", "content": "Good, now make the fix."})
    path.write_text("\n".join(lines) + "\n")
    return path
