"""OpenAI Codex CLI rollout files (JSONL of ``{timestamp, type, payload}``), read only.

The conversation is in the ``response_item`` records (Responses API items): messages, reasoning,
``function_call`` / ``custom_tool_call`` and their outputs, linked by ``call_id``. ``event_msg``
records repeat what the items hold and are skipped; ``turn_context`` gives the model. A
``compacted`` record replaces the history with its ``replacement_history``: it starts a new
segment, as a compaction boundary does in a Claude Code session. The older format without the
envelope (bare items, one per line) is read the same way.

Items are grouped into messages the way the model sees them: consecutive assistant-side items
(text, reasoning, calls) form one assistant message; consecutive outputs form one user message
of tool results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import InputError
from ipse.transcript._jsonl import JsonlRecord, read_jsonl
from ipse.transcript._links import check_links
from ipse.transcript._model import (
    Block,
    Conversation,
    Message,
    Origin,
    Other,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from ipse.transcript._origin import classify_user_text
from ipse.transcript._thread import Segment, Thread

_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def read_rollout(
    path: str | Path, *, skip_bad_lines: bool = False, warnings: list[str] | None = None
) -> Thread:
    """A rollout file as one thread, cut into segments at ``compacted`` records."""
    p = Path(path)
    records = list(read_jsonl(p, skip_bad_lines=skip_bad_lines, warnings=warnings))
    if not records:
        raise InputError("no records in the rollout file", path=p)
    segments: list[tuple[Mapping[str, Any] | None, list[tuple[int, Mapping[str, Any]]]]] = [
        (None, [])
    ]
    model: str | None = None
    for record in records:
        kind, payload = _unwrap(record)
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif kind == "compacted":
            history = payload.get("replacement_history") or []
            items = [(record.line, item) for item in history if isinstance(item, Mapping)]
            segments.append((dict(record.data), items))
        elif kind == "response_item":
            segments[-1][1].append((record.line, payload))
    if not segments[0][1] and len(segments) > 1:
        segments.pop(0)
    known: set[str] = set()
    built = []
    for number, (boundary, items) in enumerate(segments):
        messages = _messages(items)
        check_links(messages, path=p, known=known)
        conversation = Conversation(
            messages=tuple(messages),
            settings={"model": model} if model else {},
            dialect="openai-responses",
            meta={
                "format": "codex",
                "path": str(p),
                "thread": "main",
                "segment": number,
                "boundary": boundary,
            },
        )
        built.append(Segment(conversation, boundary))
    return Thread("main", tuple(built), str(p))


def _unwrap(record: JsonlRecord) -> tuple[str, Mapping[str, Any]]:
    data = record.data
    payload = data.get("payload")
    if isinstance(payload, Mapping) and isinstance(data.get("type"), str):
        return data["type"], payload
    return "response_item", data  # the older format: bare items


def _role_of(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        return role if isinstance(role, str) else None
    if kind in _CALLS or kind == "reasoning":
        return "assistant"
    if kind in _OUTPUTS:
        return "user"
    return None


def _messages(items: Iterable[tuple[int, Mapping[str, Any]]]) -> list[Message]:
    out: list[Message] = []
    current_role: str | None = None
    blocks: list[Block] = []
    lines: list[int] = []

    def flush() -> None:
        if current_role is not None and blocks:
            out.append(Message(current_role, tuple(blocks), "blocks", None, {"lines": lines[:]}))

    for line, item in items:
        role = _role_of(item)
        if role is None:
            continue
        is_output = item.get("type") in _OUTPUTS
        group = f"{role}:{'out' if is_output else 'in'}"
        previous = (
            None
            if current_role is None
            else f"{current_role}:{'out' if _is_output_group(blocks) else 'in'}"
        )
        if group != previous or (item.get("type") == "message" and role != "assistant"):
            flush()
            current_role, blocks, lines = role, [], []
        blocks.extend(_blocks(item, role))
        lines.append(line)
    flush()
    return out


def _is_output_group(blocks: list[Block]) -> bool:
    return bool(blocks) and all(isinstance(b, ToolResult) for b in blocks)


def _blocks(item: Mapping[str, Any], role: str) -> list[Block]:
    kind = item.get("type")
    if kind == "message":
        return [_part(part, role) for part in item.get("content") or []]
    if kind == "reasoning":
        summary = item.get("summary") or []
        text = "\n\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
        content = item.get("content")
        if not text and isinstance(content, list):
            text = "\n\n".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
        return [Thinking(text, None, redacted=not text, raw=item)]
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input"))
        parsed: Any = arguments
        if kind == "function_call" and isinstance(arguments, str):
            try:
                parsed = jsonio.loads(arguments)
            except jsonio.JSONDecodeError:
                parsed = arguments
        return [
            ToolCall(
                str(item.get("call_id", "")),
                str(item.get("name", "")),
                parsed,
                arguments if isinstance(arguments, str) else None,
                raw=item,
            )
        ]
    if kind in ("local_shell_call", "web_search_call"):
        return [
            ToolCall(
                str(item.get("call_id", item.get("id", ""))),
                str(kind),
                item.get("action"),
                raw=item,
            )
        ]
    if kind in _OUTPUTS:
        output = item.get("output")
        text = output if isinstance(output, str) else jsonio.dumps(output).decode()
        return [ToolResult(str(item.get("call_id", "")), text, raw=item)]
    return [Other(str(kind), raw=item)]


def _part(part: Any, role: str) -> Block:
    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
        text = part["text"]
        if role == "assistant":
            origin = Origin.AGENT
        elif role in ("developer", "system"):
            origin = Origin.HARNESS
        else:
            origin = classify_user_text(text)
        return Text(text, origin, raw=part)
    if isinstance(part, Mapping):
        return Other(str(part.get("type", "unknown")), raw=part)
    return Other(type(part).__name__, raw={"value": part})
