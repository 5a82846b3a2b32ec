"""Hand-built sessions for the replay tests: a conversation of turns, each a prompt, a tool call
with a large result and an answer, sent as Anthropic requests the way Claude Code sends them (a
breakpoint on the system prompt and on the newest block), at times the test chooses."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

from ipse.prefix import Request
from ipse.prefix._requests import RequestLog
from tests.prefix.util import MODEL, SYSTEM_TEXT, T0, TOOLS


def turn(n: int, size: int) -> list[dict[str, Any]]:
    """One turn: the human's prompt, the agent's call, its result (``size`` characters), the
    agent's answer."""
    return [
        {"role": "user", "content": f"step {n}: look at module {n} and fix what fails"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Reading module {n} first."},
                {"type": "tool_use", "id": f"call{n}", "name": "run",
                 "input": {"command": f"cat module{n}.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"call{n}",
                         "content": f"line of module {n} " * (size // 18)}],
        },
        {"role": "assistant", "content": f"Module {n} is fixed: the loop ran one step too far."},
    ]  # fmt: skip


def history(turns: int, size: int) -> list[dict[str, Any]]:
    return [m for n in range(turns) for m in turn(n, size)]


def bodies(turns: int, size: int = 20_000, ttl: str | None = None) -> list[dict[str, Any]]:
    """The requests of ``turns`` turns: each sends the history up to a human prompt or a tool
    result, its newest block marked (with ``ttl``: that TTL), the system prompt marked too."""
    whole = history(turns, size)
    mark: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        mark["ttl"] = ttl
    out = []
    for end, message in enumerate(whole):
        if message["role"] != "user":
            continue
        messages = copy.deepcopy(whole[: end + 1])
        last = messages[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        content[-1] = {**content[-1], "cache_control": dict(mark)}
        last["content"] = content
        out.append(
            {
                "model": MODEL,
                "max_tokens": 1024,
                "tools": copy.deepcopy(TOOLS),
                "system": [{"type": "text", "text": SYSTEM_TEXT, "cache_control": dict(mark)}],
                "messages": messages,
            }
        )
    return out


def log_of(
    sent: list[dict[str, Any]],
    gaps: dict[int, float] | None = None,
    usage: list[dict[str, Any] | None] | None = None,
) -> RequestLog:
    """``sent`` as a log: each request 10 s after the one before (``gaps``: other seconds
    before the request of that index), answered 2 s after it was sent."""
    t = T0
    requests = []
    for i, body in enumerate(sent):
        if i:
            t += timedelta(seconds=(gaps or {}).get(i, 10))
        used = usage[i] if usage is not None else None
        requests.append(
            Request(i, body, "anthropic", t, t + timedelta(seconds=2), used, f"request {i}")
        )
    return RequestLog(Path("built"), "http-log", requests)
