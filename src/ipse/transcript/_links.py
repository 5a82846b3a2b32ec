"""Linking tool results to their calls: a result whose call never came is bad input."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ipse.errors import InvalidConversation
from ipse.transcript._model import Message, ToolCall, ToolResult


def message_position(index: int, message: Message) -> str:
    """Where a message is: its source line when known, else its index."""
    return meta_position(index, message.meta)


def meta_position(index: int, meta: Mapping[str, Any]) -> str:
    """`message_position` of the message at ``index`` whose meta is ``meta``."""
    lines = meta.get("lines")
    if lines:
        return f"line {lines[0]}"
    return f"message {index}"


def check_links(
    messages: Iterable[Message],
    *,
    path: str | Path | None,
    known: set[str] | None = None,
    position: Callable[[int, Message], str] = message_position,
) -> set[str]:
    """Raise `InvalidConversation` at the first tool result with no earlier call.

    ``known`` carries call ids over from earlier parts (segments before a compaction); the
    updated set is returned.
    """
    seen = set() if known is None else known
    for index, message in enumerate(messages):
        for block in message.blocks:
            if isinstance(block, ToolCall):
                seen.add(block.id)
            elif isinstance(block, ToolResult) and block.call_id not in seen:
                raise InvalidConversation(
                    f"tool result {block.call_id!r} has no matching tool call",
                    path=path,
                    position=position(index, message),
                )
    return seen


def orphan_results(
    messages: Iterable[Message], *, known: set[str] | None = None
) -> tuple[list[tuple[int, str]], set[str]]:
    """Tool results with no earlier call, as (message index, call id); and the calls seen.

    For inputs that may start mid-exchange (a continued session, a fixture cut from a longer
    one): the reader keeps such results and warns, and a handoff removes them."""
    seen = set() if known is None else known
    orphans: list[tuple[int, str]] = []
    for index, message in enumerate(messages):
        for block in message.blocks:
            if isinstance(block, ToolCall):
                seen.add(block.id)
            elif isinstance(block, ToolResult) and block.call_id not in seen:
                orphans.append((index, block.call_id))
    return orphans, seen
