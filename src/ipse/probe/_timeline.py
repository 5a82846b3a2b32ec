"""A session as one timeline of messages, with the agent CLI's own compactions marked on it.

A Claude Code session or a Codex rollout is a thread cut into segments at compaction
boundaries; each later segment opens with what the agent CLI kept (Claude Code's compaction summary
record, Codex's replayed ``replacement_history``). The probe asks "what if the session had been
cut here", so it needs the messages as they happened, once each: the timeline is every segment's
messages in order, less the agent CLI's kept openings, which become the `Compaction` found at the
index where the segment began. Single-conversation formats are a timeline with no compactions.

`block_text` is the one rendering of a block the probe measures (tokens) and searches (facts):
a tool call is its name and every string of its input, one per line, so a path or a command is
found in it exactly as the agent wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipse.handoff._shared import strings
from ipse.transcript import Conversation, Message, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import Block, Dialect, Origin, Source


@dataclass(frozen=True, slots=True)
class Compaction:
    """The agent CLI's own compaction: where it happened and the text it kept."""

    index: int  # timeline index: messages [0, index) were compacted
    kept: tuple[Message, ...]  # the summary (and replayed items) that replaced them
    note: str = ""  # a summary carried on the boundary record itself (Codex's ``message``)

    def text(self) -> str:
        parts = [block_text(b) for m in self.kept for b in m.blocks]
        if self.note:
            parts.append(self.note)
        return "\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Every message of a session once, in order, and the compactions on it."""

    messages: tuple[Message, ...]
    compactions: tuple[Compaction, ...]
    dialect: Dialect
    system: tuple[Any, ...] = ()
    format: str = ""

    def conversation(self, end: int) -> Conversation:
        """The messages before ``end`` as a conversation of the session's dialect."""
        return Conversation(messages=self.messages[:end], system=self.system, dialect=self.dialect)

    def cuts(self) -> list[int]:
        """Every index a cut may fall on: no tool result at or after it answers a call before it,
        and at least one message on each side."""
        open_calls: set[str] = set()
        out: list[int] = []
        for index, message in enumerate(self.messages):
            if index > 0 and not open_calls:
                out.append(index)
            for block in message.blocks:
                if isinstance(block, ToolCall):
                    open_calls.add(block.id)
                elif isinstance(block, ToolResult):
                    open_calls.discard(block.call_id)
        return out

    def closed(self) -> bool:
        """Whether every tool call of the timeline has its result (so a cut may fall at its end,
        as a handoff of the next request would)."""
        calls = {b.id for m in self.messages for b in m.blocks if isinstance(b, ToolCall)}
        answered = {b.call_id for m in self.messages for b in m.blocks if isinstance(b, ToolResult)}
        return calls <= answered

    def settle(self, index: int) -> int:
        """The nearest valid cut at or before ``index`` (0 when there is none)."""
        valid = [c for c in self.cuts() if c <= index]
        return valid[-1] if valid else 0

    def turns(self) -> list[int]:
        """The indices of the agent's messages (each one a request to the model)."""
        return [i for i, m in enumerate(self.messages) if m.role == "assistant"]


def timeline(source: Source) -> Timeline:
    """The timeline of a loaded session."""
    if source.thread is None:
        conversation = source.current()
        return Timeline(
            conversation.messages, (), conversation.dialect, conversation.system, source.format
        )
    messages: list[Message] = []
    compactions: list[Compaction] = []
    first = source.thread.segments[0].conversation
    for segment in source.thread.segments:
        seg = segment.conversation.messages
        kept = 0
        if segment.boundary is not None:
            while kept < len(seg) and _kept_by_compaction(seg[kept]):
                kept += 1
            compactions.append(
                Compaction(len(messages), tuple(seg[:kept]), _boundary_note(segment.boundary))
            )
        messages.extend(seg[kept:])
    return Timeline(tuple(messages), tuple(compactions), first.dialect, first.system, source.format)


def _kept_by_compaction(message: Message) -> bool:
    meta = message.meta or {}
    return bool(meta.get("is_compact_summary") or meta.get("replayed"))


def _boundary_note(boundary: Mapping[str, Any]) -> str:
    payload = boundary.get("payload")
    if isinstance(payload, Mapping) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    return ""


def call_text(call: ToolCall) -> str:
    """A tool call as the probe reads it: its name and each string of its input, one a line."""
    found = list(strings(call.input))
    if not found and call.arguments:
        found = [call.arguments]
    return "\n".join([call.name, *found])


def block_text(block: Block) -> str:
    """The text of a block the probe counts and searches ("" for images and unknown blocks)."""
    if isinstance(block, Text | Thinking):
        return block.text
    if isinstance(block, ToolCall):
        return call_text(block)
    if isinstance(block, ToolResult):
        return block.text
    return ""


def messages_text(messages: Sequence[Message]) -> str:
    return "\n".join(block_text(b) for m in messages for b in m.blocks)


def is_authored(block: Block) -> bool:
    return isinstance(block, Text) and block.origin in (Origin.HUMAN, Origin.AGENT)


__all__ = [
    "Compaction",
    "Timeline",
    "block_text",
    "call_text",
    "is_authored",
    "messages_text",
    "strings",
    "timeline",
]
