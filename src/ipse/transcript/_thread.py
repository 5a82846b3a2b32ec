"""A thread of a session: its live path cut into segments at compaction boundaries.

Claude Code sessions and Codex rollouts both compact: the model's window is replaced by a
summary (or a replacement history) and the conversation goes on. A `Thread` keeps every
segment, oldest first; the last one is what the model saw last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ipse.transcript._model import Conversation, Message


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch of a thread between compaction boundaries."""

    conversation: Conversation
    boundary: Mapping[str, Any] | None  # the compact_boundary record that opened it, if any


@dataclass(frozen=True)
class Thread:
    """A thread's live path, cut into segments at compaction boundaries (oldest first)."""

    name: str
    segments: tuple[Segment, ...]
    path: str
    # records on the live path that are not messages, by type (progress, attachment, ...)
    skipped: Mapping[str, int] = field(default_factory=dict)

    @property
    def conversation(self) -> Conversation:
        """What the model saw last: the segment after the last compaction boundary."""
        return self.segments[-1].conversation

    @property
    def compactions(self) -> int:
        return sum(1 for s in self.segments if s.boundary is not None)

    def all_messages(self) -> Iterator[Message]:
        for segment in self.segments:
            yield from segment.conversation.messages
