"""Prompt-cache breakpoints through a strip: a marker on a removed block moves, it is not lost.

A client marks blocks with a breakpoint (Anthropic's ``cache_control``) to say where the
provider should write cache entries. Stripping removes tool calls, results and thinking, and
joins texts; a marker on such a block would vanish with it and the rewritten request would cache
less than the client asked for. `place` puts every marker of the rewritten part back on the
nearest kept block at or before the block that carried it: its own block when that stayed (or
the text it was joined into), else the block kept just before it. Two markers never share a
block: the older one moves back to the previous free kept block, so the count is kept (and the
order of the markers, which matters for mixed TTLs), and no block gets a marker that no input
block had. A marker with no kept block at or before it is dropped: the count never grows.

The result is a pure function of the input, so the same history gives the same bytes on every
request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ipse.transcript import Message, Text, ToolResult
from ipse.transcript._shared import Block


def marker(block: Block, key: str, *, nested: bool = False) -> Any:
    """The breakpoint a block carries; with ``nested``, a tool result's content counts too (a
    removed result's markers move with it; a kept one's stay where the client put them)."""
    raw = block.raw
    if raw is None:
        return None
    found = raw.get(key)
    if (
        found is None
        and nested
        and isinstance(block, ToolResult)
        and not isinstance(block.content, str)
    ):
        for inner in reversed(block.content):
            if inner.raw is not None and inner.raw.get(key) is not None:
                return inner.raw.get(key)
    return found


def place(
    messages: list[Message],
    anchors: Sequence[tuple[Block | None, Any]],
    joined: Mapping[int, Block],
    key: str,
) -> list[Message]:
    """``messages`` (the rewritten part) with the markers of ``anchors`` placed on their blocks.

    ``anchors`` lists, in input order, each marker of the input part with the output block it
    belongs at (before joining; None: no kept block before it); ``joined`` maps the id of a text
    block that was joined to the block it became."""
    if not anchors:
        return messages
    flat: list[tuple[int, int]] = []  # (message index, block index) of every output block
    where: dict[int, int] = {}  # id(block) -> position in flat
    for m, message in enumerate(messages):
        for b, block in enumerate(message.blocks):
            where[id(block)] = len(flat)
            flat.append((m, b))
    wanted: dict[int, Any] = {}  # position -> marker
    for anchor, mark in reversed(anchors):  # newest first, so the order of the markers is kept
        if anchor is None:
            continue
        target = joined.get(id(anchor), anchor)
        position = where.get(id(target))
        if position is None:
            continue
        while position >= 0 and position in wanted:
            position -= 1
        if position >= 0:
            wanted[position] = mark
    changed: dict[int, dict[int, Block]] = {}
    for position, (m, b) in enumerate(flat):
        block = messages[m].blocks[b]
        mark = wanted.get(position)
        if marker(block, key) == mark:
            continue
        changed.setdefault(m, {})[b] = _marked(block, mark, key)
    if not changed:
        return messages
    out = list(messages)
    for m, blocks in changed.items():
        message = out[m]
        new = tuple(blocks.get(b, block) for b, block in enumerate(message.blocks))
        out[m] = replace(message, blocks=new, content_form="blocks")
    return out


def _marked(block: Block, mark: Any, key: str) -> Block:
    raw: dict[str, Any] = dict(block.raw) if block.raw is not None else {}
    if isinstance(block, Text) and raw.get("type") != "text":
        raw = {"type": "text", "text": block.text}
    elif isinstance(block, Text):
        raw["text"] = block.text
    raw.pop(key, None)
    if mark is not None:
        raw[key] = mark
    return replace(block, raw=raw)


__all__ = ["marker", "place"]
