"""Where a handoff cuts a conversation: at the checkpoint call, at a message index, or ``now``.

Everything before the cut is rewritten; everything from the cut on stays byte for byte.

- ``checkpoint`` (the default): after the result of the most recent call of the checkpoint tool
  (``micro_handoff``, in any shape a harness delivers it: `ipse.handoff._recognise`); when that
  call is still unanswered, just before the message holding it.
- an index ``N`` (0 to the number of messages): messages ``[0, N)`` are rewritten.
- ``end``: every message (the same as the index of the last message plus one).
- ``now``: everything except an unfinished tool exchange at the end (the last assistant message,
  and what follows it, when a call of it has no result yet); an answered exchange at the end is
  finished and is handed off with the rest.

A cut that would split a tool exchange (a call before it, its result after it) moves back to the
message holding the call, so no result is ever left without its call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

from ipse._plain import plain_dataclass
from ipse.errors import CutError, UsageError
from ipse.handoff._recognise import CHECKPOINT_TOOL, checkpoint_tool_of
from ipse.transcript import Conversation, Message, ToolCall, ToolResult

At: TypeAlias = int | str | None
CutKind: TypeAlias = Literal["checkpoint", "index", "now", "end"]


@plain_dataclass(frozen=True, slots=True)
class CutPoint:
    """A resolved cut: the message index, how it was asked for, and the checkpoint call."""

    index: int
    kind: CutKind
    checkpoint_id: str | None = None

    def __init__(
        self,
        index: int,
        kind: CutKind,
        checkpoint_id: str | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "index", index)
        set_(self, "kind", kind)
        set_(self, "checkpoint_id", checkpoint_id)


def parse_at(at: At) -> tuple[CutKind, int | None]:
    """Read ``--at``: ``checkpoint``, ``now``, or a message index."""
    if at is None or at == "checkpoint":
        return "checkpoint", None
    if at == "now":
        return "now", None
    if at == "end":
        return "end", None
    if isinstance(at, bool):
        raise UsageError(f"--at: expected checkpoint, now, end or a message index, got {at!r}")
    if isinstance(at, int):
        return "index", at
    text = str(at).strip()
    if re.fullmatch(r"-?[0-9]+", text):
        return "index", int(text)
    raise UsageError(f"--at: expected checkpoint, now, end or a message index, got {at!r}")


def resolve_cut(conversation: Conversation, at: At = None, tool: str = CHECKPOINT_TOOL) -> CutPoint:
    """The cut ``at`` asks for, before any adjustment for tool exchanges."""
    kind, index = parse_at(at)
    messages = conversation.messages
    if kind == "index":
        assert index is not None
        if not 0 <= index <= len(messages):
            raise CutError(
                f"cut {index} is out of range: the conversation has {len(messages)} "
                f"messages, so a cut is 0..{len(messages)}"
            )
        return CutPoint(index, "index")
    if kind == "now":
        return CutPoint(_now(messages), "now")
    if kind == "end":
        return CutPoint(len(messages), "end")
    return _checkpoint(messages, tool)


def _now(messages: Sequence[Message]) -> int:
    """Before the last assistant message when one of its calls has no result yet; else every
    message (an answered exchange is finished, and goes like the rest)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "assistant":
            calls = {b.id for b in message.blocks if isinstance(b, ToolCall)}
            answered = {
                b.call_id for m in messages[i + 1 :] for b in m.blocks if isinstance(b, ToolResult)
            }
            return i if calls - answered else len(messages)
    return len(messages)


def results_by_call(messages: Sequence[Message]) -> dict[str, ToolResult]:
    """Each answered call's result, by call id."""
    return {b.call_id: b for m in messages for b in m.blocks if isinstance(b, ToolResult)}


def _checkpoint(messages: Sequence[Message], tool: str) -> CutPoint:
    results = results_by_call(messages)
    for i in range(len(messages) - 1, -1, -1):
        calls = [
            b
            for b in messages[i].blocks
            if isinstance(b, ToolCall) and checkpoint_tool_of(b, (tool,), results.get(b.id))
        ]
        if not calls:
            continue
        call = calls[-1]
        for j in range(i + 1, len(messages)):
            if any(isinstance(b, ToolResult) and b.call_id == call.id for b in messages[j].blocks):
                return CutPoint(j + 1, "checkpoint", call.id)
            if messages[j].role not in ("tool", "user"):
                break
        return CutPoint(i, "checkpoint", call.id)
    raise CutError(
        f"no call of the checkpoint tool {tool!r} in this conversation; cut elsewhere with "
        "--at now (all but an unfinished tool exchange), --at end (every message) or --at N "
        f"(a message index, 0 to {len(messages)}; `ipse inspect` lists them)"
    )


def settle(messages: Sequence[Message], index: int) -> int:
    """Move ``index`` back until no tool result at or after it answers a call before it."""
    while index > 0:
        answered = {
            b.call_id for m in messages[index:] for b in m.blocks if isinstance(b, ToolResult)
        }
        split = next(
            (
                i
                for i in range(index)
                if any(isinstance(b, ToolCall) and b.id in answered for b in messages[i].blocks)
            ),
            None,
        )
        if split is None:
            return index
        index = split
    return index


__all__ = [
    "CHECKPOINT_TOOL",
    "At",
    "CutKind",
    "CutPoint",
    "parse_at",
    "resolve_cut",
    "results_by_call",
    "settle",
]
