"""What a conversation is made of: messages, turns, tool calls by name, and tokens by kind.

Every block falls into one kind: text by its origin (human, agent, harness), tool calls, tool
results, thinking, other (images, documents, server-tool blocks); plus the system prompt and the
tool definitions of the request. A tool call counts as its name and its arguments as compact
JSON; a tool result as its text. Counts are memoised by text, so a log of requests that repeat
the same history counts each distinct text once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ipse import jsonio
from ipse._tokens import TokenCounter
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

KINDS = (
    "human_text",
    "agent_text",
    "harness_text",
    "tool_calls",
    "tool_results",
    "thinking",
    "other",
    "system",
    "tools",
)

_TEXT_KIND = {
    Origin.HUMAN: "human_text",
    Origin.AGENT: "agent_text",
    Origin.HARNESS: "harness_text",
    Origin.SYSTEM: "system",
}


def block_kind(block: Block) -> str:
    """The composition kind of a message block."""
    if isinstance(block, Text):
        return _TEXT_KIND[block.origin]
    if isinstance(block, ToolCall):
        return "tool_calls"
    if isinstance(block, ToolResult):
        return "tool_results"
    if isinstance(block, Thinking):
        return "thinking"
    return "other"


def counted_text(block: Block) -> str:
    """The text whose tokens a block is counted as."""
    if isinstance(block, Text):
        return block.text
    if isinstance(block, ToolCall):
        if block.arguments is not None:
            return f"{block.name} {block.arguments}"
        return f"{block.name} {_json(block.input)}"
    if isinstance(block, ToolResult):
        if isinstance(block.content, str):
            return block.content
        return "\n".join(counted_text(b) for b in block.content)
    if isinstance(block, Thinking):
        return block.text
    return _other_text(block)


def _other_text(block: Other) -> str:
    if block.raw is None:
        return block.type
    return _json(without_payloads(block.raw))


def without_payloads(value: Any) -> Any:
    """Large base64 payloads (images, documents) are not text; count their description only."""
    if isinstance(value, Mapping):
        return {k: without_payloads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_payloads(v) for v in value]
    if isinstance(value, str) and len(value) > 2000 and " " not in value[:2000]:
        return f"<{len(value)} bytes>"
    return value


def _json(value: Any) -> str:
    try:
        return jsonio.dumps(value).decode("utf-8")
    except TypeError:
        return str(value)


@dataclass
class TokenTally:
    """Tokens by kind, counted with one tokenizer, memoised by text."""

    counter: TokenCounter
    by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    _memo: dict[str, int] = field(default_factory=dict, repr=False)

    def count(self, text: str) -> int:
        cached = self._memo.get(text)
        if cached is None:
            cached = self.counter.count(text)
            self._memo[text] = cached
        return cached

    def add_messages(self, messages: Iterable[Message]) -> None:
        for message in messages:
            for block in message.blocks:
                self.by_kind[block_kind(block)] += self.count(counted_text(block))

    def add_front(self, conversation: Conversation) -> None:
        """The system prompt and the tool definitions."""
        for block in conversation.system:
            self.by_kind["system"] += self.count(counted_text(block))
        for tool in conversation.tools:
            self.by_kind["tools"] += self.count(_json(tool.raw) if tool.raw else tool.name)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def fresh(self) -> TokenTally:
        """An empty tally sharing this one's counter and memo."""
        return TokenTally(self.counter, _memo=self._memo)

    def add_conversation(self, conversation: Conversation) -> None:
        """What the model is sent: the front (system prompt, tool definitions), then the
        messages. The one count of a conversation's tokens by kind: ``ipse inspect`` counts
        with it, and ``ipse report`` counts each request's blocks the same way."""
        self.add_front(conversation)
        self.add_messages(conversation.messages)

    def conversation_tokens(self, conversation: Conversation) -> int:
        """Every token of a request: front plus messages."""
        tally = self.fresh()
        tally.add_conversation(conversation)
        return tally.total


def message_counts(messages: Iterable[Message]) -> dict[str, Any]:
    """Messages, turns (human messages), tool calls, and tool calls by tool name."""
    total = 0
    turns = 0
    by_name: Counter[str] = Counter()
    for message in messages:
        total += 1
        if message.role == "user" and any(
            isinstance(b, Text) and b.origin is Origin.HUMAN for b in message.blocks
        ):
            turns += 1
        for block in message.blocks:
            if isinstance(block, ToolCall):
                by_name[block.name] += 1
    return {
        "messages": total,
        "turns": turns,
        "tool_calls": sum(by_name.values()),
        "tool_calls_by_name": dict(sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def shares(by_kind: Mapping[str, int]) -> dict[str, float]:
    """Each kind's share of the total, rounded to four places."""
    total = sum(by_kind.values())
    return {k: round(v / total, 4) if total else 0.0 for k, v in by_kind.items()}
