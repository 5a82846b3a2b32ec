"""The transitions as model tools, and a dispatcher that applies a model's tool calls.

One table of tool specs renders as Anthropic tool definitions (``name``, ``description``,
``input_schema``) and as OpenAI function tools. `dispatch` takes the tool calls of one model
turn (Anthropic ``tool_use`` blocks or OpenAI ``tool_calls`` entries), applies the twin's
calls in order as one batch (then decay), and returns the new state with one result per call
ready to send back. Calls to tools that are not the twin's are skipped and listed. A malformed
call raises `InputError` and nothing is applied, so a twin's own model can drive its
transitions without ever leaving a half-applied turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ipse.errors import InputError
from ipse.twin._apply import Applied, apply_transitions
from ipse.twin._decay import NO_DECAY, DecayPolicy
from ipse.twin._state import TwinState

_STR = {"type": "string"}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


TOOL_SPECS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "establish_fact",
        "Record a fact now established with the person you are talking to, so it is never "
        "asked again.",
        _schema(
            {
                "text": {**_STR, "description": "The fact, as one short sentence."},
                "pinned": {"type": "boolean", "description": "Never let this fact decay."},
                "expires_at": {**_STR, "description": "ISO-8601 time after which it is void."},
            },
            ["text"],
        ),
    ),
    (
        "supersede_fact",
        "Replace an established fact that is no longer true by a newer one.",
        _schema(
            {
                "fact": {**_STR, "description": "Id or exact text of the old fact."},
                "text": {**_STR, "description": "The new fact."},
            },
            ["fact", "text"],
        ),
    ),
    (
        "make_commitment",
        "Record a commitment (a promise, or a tone or posture to keep) made in this conversation.",
        _schema({"text": {**_STR, "description": "The commitment."}}, ["text"]),
    ),
    (
        "open_loop",
        "Open a loop: something you are pulling and must come back to.",
        _schema(
            {
                "text": {**_STR, "description": "What is open."},
                "active": {"type": "boolean", "description": "Make it the active loop."},
            },
            ["text"],
        ),
    ),
    (
        "close_loop",
        "Close an open loop that is done.",
        _schema({"loop": {**_STR, "description": "Id or exact text of the loop."}}, ["loop"]),
    ),
    (
        "set_active_loop",
        "Choose which open loop to act on first.",
        _schema({"loop": {**_STR, "description": "Id or exact text of the loop."}}, ["loop"]),
    ),
    (
        "set_counterparty",
        "Name the account or person you are talking to.",
        _schema({"account": {**_STR, "description": "Who you are talking to."}}, ["account"]),
    ),
    (
        "use_fact",
        "Note that you relied on an established fact in this turn, so it stays fresh.",
        _schema({"fact": {**_STR, "description": "Id or exact text of the fact."}}, ["fact"]),
    ),
)

TOOL_NAMES = frozenset(name for name, _, _ in TOOL_SPECS)


def usage_lines() -> list[str]:
    """One line per transition: its name, required arguments, [optional ones], what it does."""
    lines = []
    for name, description, schema in TOOL_SPECS:
        required = schema["required"]
        optional = [f"[{arg}]" for arg in schema["properties"] if arg not in required]
        lines.append(f"{name} {' '.join([*required, *optional])}: {description}")
    return lines


def tool_definitions(dialect: str) -> list[dict[str, Any]]:
    """The transitions as tool definitions in a dialect's shape (``openai``: Chat Completions);
    `UsageError` for a dialect no codec has."""
    from ipse.transcript._shared import codec

    dialect_codec = codec(dialect)
    return [dialect_codec.tool(name, desc, schema) for name, desc, schema in TOOL_SPECS]


def anthropic_tools() -> list[dict[str, Any]]:
    """The transitions as Anthropic Messages tool definitions."""
    return tool_definitions("anthropic")


def openai_tools() -> list[dict[str, Any]]:
    """The transitions as OpenAI function tools (Chat Completions shape)."""
    return tool_definitions("openai")


@dataclass(frozen=True)
class ToolCall:
    """One tool call, whichever provider it came from."""

    id: str
    name: str
    arguments: dict[str, Any]
    dialect: str


@dataclass(frozen=True)
class Dispatched:
    """The outcome of one turn's tool calls."""

    applied: Applied
    calls: tuple[ToolCall, ...]
    skipped: tuple[ToolCall, ...]

    @property
    def state(self) -> TwinState:
        """The state after the calls and decay."""
        return self.applied.state

    def results(self) -> list[dict[str, Any]]:
        """One result per applied call, in the caller's provider shape."""
        from ipse.transcript import ToolResult
        from ipse.transcript._shared import codec

        out: list[dict[str, Any]] = []
        for call in self.calls:
            text = f"ok: {call.name} applied"
            out.append(dict(codec(call.dialect).write_block(ToolResult(call.id, text))))
        return out


def parse_call(raw: Any, index: int = 0) -> ToolCall | None:
    """A provider tool call → `ToolCall`; None for content that is not a tool call."""
    where = f"tool call {index}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected an object, got {type(raw).__name__}")
    if raw.get("type") == "tool_use":
        args = raw.get("input", {})
        if not isinstance(args, dict):
            raise InputError(f"{where}: input: expected an object")
        return ToolCall(str(raw.get("id", "")), str(raw.get("name", "")), args, "anthropic")
    function = raw.get("function")
    if isinstance(function, dict):
        text = function.get("arguments", "{}")
        try:
            args = json.loads(text) if isinstance(text, str) else text
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{where}: function.arguments: not valid JSON") from exc
        if not isinstance(args, dict):
            raise InputError(f"{where}: function.arguments: expected an object")
        return ToolCall(str(raw.get("id", "")), str(function.get("name", "")), args, "openai")
    return None


def dispatch(
    state: TwinState,
    tool_calls: Iterable[Any],
    *,
    policy: DecayPolicy = NO_DECAY,
    at: datetime | None = None,
) -> Dispatched:
    """Apply the twin's tool calls of one model turn to ``state``, all or nothing."""
    ours: list[ToolCall] = []
    skipped: list[ToolCall] = []
    for index, raw in enumerate(tool_calls, start=1):
        call = parse_call(raw, index)
        if call is None:
            continue
        (ours if call.name in TOOL_NAMES else skipped).append(call)
    records = [{"op": c.name, **c.arguments} for c in ours]
    applied = apply_transitions(state, records, policy=policy, at=at)
    return Dispatched(applied, tuple(ours), tuple(skipped))
