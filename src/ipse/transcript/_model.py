"""The neutral transcript model: `Conversation`, `Message` and the five block kinds.

Every mechanism of ipse reads agent conversations through these types, whatever format they came
from. They are immutable values (frozen dataclasses holding tuples). Each block and message keeps
the provider's original dict in ``raw``; writers emit ``raw`` unchanged for everything a transform
did not touch, so unknown fields and unknown block types pass through untouched. The ``raw`` dicts
are shared, never copied: treat them as read-only.

Authorship is the cut line of the model: a `Text` block carries its `Origin` (human, agent,
harness, system). Tool calls, tool results and thinking are the traffic between them.

``dialect`` names the shape of the ``raw`` dicts (``anthropic``, ``openai-chat`` or
``openai-responses``) and so the codec (`ipse.transcript.codec`) that writes the conversation
back: a Claude Code session, for one, holds Anthropic-shaped blocks, so it can be written out as
an Anthropic request; a Codex rollout holds Responses items.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

Dialect: TypeAlias = Literal["anthropic", "openai-chat", "openai-responses"]
ContentForm: TypeAlias = Literal["string", "blocks", "none"]


class Origin(enum.StrEnum):
    """Who wrote a piece of text."""

    HUMAN = "human"
    AGENT = "agent"
    HARNESS = "harness"  # system reminders, command expansions, hook output, environment details
    SYSTEM = "system"  # the system prompt (developer or harness instructions)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Text:
    """Words written by a human, the agent, the harness, or the system prompt."""

    text: str
    origin: Origin = Origin.HUMAN
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    kind: Literal["text"] = field(default="text", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asking for a tool to run. ``input`` is the parsed arguments when they parse;
    ``arguments`` keeps the exact argument string where the provider sends one (OpenAI)."""

    id: str
    name: str
    input: Any
    arguments: str | None = None
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    kind: Literal["tool_call"] = field(default="tool_call", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool gave back. ``content`` holds the provider's content as it was (a string, or a
    tuple of blocks for Anthropic's block content); ``text`` is the flattened text of it."""

    call_id: str
    content: str | tuple[Block, ...]
    is_error: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    kind: Literal["tool_result"] = field(default="tool_result", init=False, repr=False)

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, Text))


@dataclass(frozen=True, slots=True)
class Thinking:
    """The model's reasoning: readable text with an optional signature, or a redacted blob."""

    text: str
    signature: str | None = None
    redacted: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    kind: Literal["thinking"] = field(default="thinking", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class Other:
    """Anything else: images, documents, server-tool blocks, block types not known yet.

    ``type`` is the provider's type name; ``raw`` is written back untouched, and is what the
    block is: two blocks of one type are equal when their dicts are."""

    type: str
    raw: Mapping[str, Any] | None = field(default=None, repr=False, hash=False)

    kind: Literal["other"] = field(default="other", init=False, repr=False)


Block: TypeAlias = Text | ToolCall | ToolResult | Thinking | Other
_B = TypeVar("_B", Text, ToolCall, ToolResult, Thinking, Other)


@dataclass(frozen=True, slots=True)
class Message:
    """One turn: a role and its blocks.

    ``content_form`` remembers whether the provider sent the content as a plain string, as a list
    of blocks, or not at all, so a writer gives back the same shape. ``meta`` carries what the
    source knew about the message beyond the request (Claude Code: uuid, timestamp, usage, ...).
    """

    role: str
    blocks: tuple[Block, ...]
    content_form: ContentForm = "blocks"
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def text(self) -> str:
        """The text blocks joined by blank lines."""
        return "\n\n".join(b.text for b in self.blocks if isinstance(b, Text))

    def of_kind(self, kind: type[_B]) -> Iterator[_B]:
        """The blocks of one kind, in order."""
        return (b for b in self.blocks if isinstance(b, kind))


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool definition offered to the model; ``raw`` is the provider's dict (compared: two
    definitions of one name with different schemas are different tools)."""

    name: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, hash=False)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request's content: system blocks, tool definitions, settings, and messages.

    ``settings`` holds every other top-level field of the request body (model, max_tokens,
    thinking, tool_choice, metadata, ...) in its original order. ``system_form`` remembers
    whether the system prompt was a string, blocks, or absent. ``raw`` is the request body the
    conversation was read from, when there was one; writers use it for key order only.
    """

    messages: tuple[Message, ...]
    system: tuple[Text | Other, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    dialect: Dialect = "anthropic"
    system_form: ContentForm = "none"
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def model(self) -> str | None:
        value = self.settings.get("model")
        return value if isinstance(value, str) else None

    def blocks(self) -> Iterator[tuple[int, Message, Block]]:
        """Every message block with its message index, in order."""
        for index, message in enumerate(self.messages):
            for block in message.blocks:
                yield index, message, block

    def tool_calls(self) -> Iterator[ToolCall]:
        for _, _, block in self.blocks():
            if isinstance(block, ToolCall):
                yield block


__all__ = [
    "Block",
    "ContentForm",
    "Conversation",
    "Dialect",
    "Message",
    "Origin",
    "Other",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolDef",
    "ToolResult",
]
