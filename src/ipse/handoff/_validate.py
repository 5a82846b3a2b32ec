"""The provider's rules for a request's messages, as data a transform can check itself against.

`validate` lists every `Problem` of a conversation: who speaks first, alternating roles, tool calls
answered in the next turn and tool results tied to their call, tool results first in a user
message, no empty content, and no thinking block in a rewritten prefix (newer Anthropic models bind
a thinking block to the exact prefix before it). One function per provider shape; each problem
carries a stable ``code`` so callers can tell what stripping repairs from what it cannot.

A tool call in the last message is *pending*, not a problem: the next request carries its result.

Anthropic bodies from newer Claude Code versions carry ``role: "system"`` messages among the
others (mid-conversation harness context, sometimes with empty content): they are allowed, take
no part in alternation or tool pairing, and may be empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from ipse._names import Names
from ipse.errors import UsageError
from ipse.transcript import Conversation, Message, Text, Thinking, ToolCall, ToolResult

ProblemCode: TypeAlias = Literal[
    "no_messages",
    "first_not_user",
    "bad_role",
    "roles_not_alternating",
    "empty_content",
    "empty_text",
    "misplaced_call",
    "misplaced_result",
    "result_not_first",
    "orphan_result",
    "unanswered_call",
    "duplicate_call_id",
    "thinking_in_rewritten",
]
PROBLEM_CODES: tuple[ProblemCode, ...] = get_args(ProblemCode)

_ANTHROPIC_ROLES = Names({"user", "assistant", "system"})
_OPENAI_ROLES = Names({"user", "assistant", "tool", "system", "developer"})
_RESPONSES_ROLES = _OPENAI_ROLES


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: a stable code, a readable message, and the message index it is at."""

    code: ProblemCode
    message: str
    index: int | None = None

    def __str__(self) -> str:
        where = f"message {self.index}: " if self.index is not None else ""
        return f"{where}{self.message} [{self.code}]"


def validate(
    conversation: Conversation, provider: str | None = None, *, rewritten: int = 0
) -> list[Problem]:
    """Every rule of ``provider`` (default: the conversation's dialect) the messages break.

    ``rewritten`` is the number of leading messages a transform rewrote; a thinking block among
    them is a problem (its signature is bound to a prefix that no longer exists).
    """
    target = provider or conversation.dialect
    messages = conversation.messages
    rules = _RULES.get(target)
    if rules is None:
        raise UsageError(f"no validation rules for {target!r}; known: {', '.join(PROVIDERS)}")
    problems = rules(messages)
    problems.extend(_thinking_in_prefix(messages, rewritten))
    problems.extend(_duplicate_ids(messages))
    problems.sort(key=lambda p: -1 if p.index is None else p.index)
    return problems


# ----------------------------------------------------------------------------------- shared


def _thinking_in_prefix(messages: Sequence[Message], rewritten: int) -> list[Problem]:
    return [
        Problem("thinking_in_rewritten", "thinking block in a rewritten part", i)
        for i, m in enumerate(messages[:rewritten])
        if any(isinstance(b, Thinking) for b in m.blocks)
    ]


def _duplicate_ids(messages: Sequence[Message]) -> list[Problem]:
    seen: set[str] = set()
    out: list[Problem] = []
    for i, message in enumerate(messages):
        for call in message.of_kind(ToolCall):
            if call.id in seen:
                out.append(Problem("duplicate_call_id", f"tool call id {call.id!r} repeats", i))
            seen.add(call.id)
    return out


def _empty_texts(index: int, message: Message, *, blank_ok: bool = True) -> list[Problem]:
    """Empty text blocks; whitespace-only ones too where the provider rejects them (Anthropic)."""
    return [
        Problem("empty_text", "empty or whitespace-only text block", index)
        for b in message.blocks
        if isinstance(b, Text) and (b.text == "" or (not blank_ok and not b.text.strip()))
    ]


def _orphans(
    index: int, results: Sequence[ToolResult], expected: set[str], every_call: set[str]
) -> list[Problem]:
    out: list[Problem] = []
    for result in results:
        if result.call_id in expected:
            continue
        if result.call_id in every_call:
            out.append(
                Problem(
                    "misplaced_result",
                    f"tool result {result.call_id!r} does not follow its call",
                    index,
                )
            )
        else:
            out.append(
                Problem(
                    "orphan_result", f"tool result {result.call_id!r} has no matching call", index
                )
            )
    return out


# -------------------------------------------------------------------------------- anthropic


def _anthropic(messages: Sequence[Message]) -> list[Problem]:
    problems: list[Problem] = []
    if not messages:
        return [Problem("no_messages", "the request has no messages")]
    speaking = [i for i, m in enumerate(messages) if m.role != "system"]
    if speaking and messages[speaking[0]].role != "user":
        problems.append(
            Problem("first_not_user", "the first message is not from the user", speaking[0])
        )
    every_call: set[str] = set()
    previous: Message | None = None  # the previous message that is not a system message
    for i, message in enumerate(messages):
        if message.role not in _ANTHROPIC_ROLES:
            problems.append(
                Problem("bad_role", f"role {message.role!r} is not user/assistant/system", i)
            )
        if message.role == "system":
            problems.extend(_system_message(i, message))
            continue
        problems.extend(_anthropic_turn(i, message, previous, every_call))
        nxt = next((m for m in messages[i + 1 :] if m.role != "system"), None)
        calls = list(message.of_kind(ToolCall))
        if calls and nxt is not None:
            answered = {r.call_id for r in nxt.of_kind(ToolResult)}
            problems.extend(
                Problem("unanswered_call", f"tool call {c.id!r} ({c.name}) is not answered", i)
                for c in calls
                if c.id not in answered
            )
        previous = message
    return problems


def _system_message(index: int, message: Message) -> list[Problem]:
    """A mid-conversation system message: text only (empty allowed), no tool traffic."""
    problems = _empty_texts(index, message, blank_ok=False)
    if any(isinstance(b, ToolCall) for b in message.blocks):
        problems.append(Problem("misplaced_call", "a tool call in a system message", index))
    if any(isinstance(b, ToolResult) for b in message.blocks):
        problems.append(Problem("misplaced_result", "a tool result in a system message", index))
    return problems


def _anthropic_turn(
    i: int, message: Message, previous: Message | None, every_call: set[str]
) -> list[Problem]:
    problems: list[Problem] = []
    if previous is not None and message.role == previous.role:
        problems.append(
            Problem("roles_not_alternating", f"two {message.role} messages in a row", i)
        )
    if not message.blocks:
        problems.append(Problem("empty_content", "a message with no content", i))
    problems.extend(_empty_texts(i, message, blank_ok=False))
    calls = list(message.of_kind(ToolCall))
    results = list(message.of_kind(ToolResult))
    if calls and message.role != "assistant":
        problems.append(Problem("misplaced_call", "a tool call outside an assistant turn", i))
    if results and message.role != "user":
        problems.append(Problem("misplaced_result", "a tool result outside a user turn", i))
    if results and not isinstance(message.blocks[0], ToolResult):
        problems.append(Problem("result_not_first", "tool results must come first", i))
    elif results:
        first_other = next(
            (k for k, b in enumerate(message.blocks) if not isinstance(b, ToolResult)), None
        )
        if first_other is not None and any(
            isinstance(b, ToolResult) for b in message.blocks[first_other:]
        ):
            problems.append(Problem("result_not_first", "tool results must come first", i))
    expected = (
        {c.id for c in previous.of_kind(ToolCall)}
        if previous is not None and previous.role == "assistant"
        else set()
    )
    problems.extend(_orphans(i, results, expected, every_call))
    every_call.update(c.id for c in calls)
    return problems


# ------------------------------------------------------------------------------ openai-chat


def _openai(messages: Sequence[Message]) -> list[Problem]:
    if not messages:
        return [Problem("no_messages", "the request has no messages")]
    walk = _ChatWalk()
    speaking = [m for m in messages if m.role not in ("system", "developer")]
    if speaking and speaking[0].role != "user":
        first = messages.index(speaking[0])
        walk.problems.append(
            Problem("first_not_user", "the first message is not from the user", first)
        )
    for i, message in enumerate(messages):
        if message.role not in _OPENAI_ROLES:
            walk.problems.append(
                Problem("bad_role", f"role {message.role!r} is not a chat role", i)
            )
        walk.problems.extend(_empty_texts(i, message))
        if message.role == "tool":
            walk.tool(i, message)
        else:
            walk.turn(i, message)
    return walk.problems


class _ChatWalk:
    """What `_openai` carries from one Chat Completions message to the next: the problems so
    far, every call seen, the calls of the last assistant message still waiting for their
    ``tool`` messages, and the side that spoke last."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.every_call: set[str] = set()
        self.open_calls: set[str] = set()
        self.open_at: int | None = None
        self.last_side: str | None = None

    def tool(self, i: int, message: Message) -> None:
        results = list(message.of_kind(ToolResult))
        self.problems.extend(_orphans(i, results, self.open_calls, self.every_call))
        self.open_calls.difference_update(r.call_id for r in results)
        self.last_side = "tool"

    def turn(self, i: int, message: Message) -> None:
        """A message that is no tool message: the calls still waiting are unanswered."""
        if self.open_calls and self.open_at is not None:
            self.problems.extend(
                Problem("unanswered_call", f"tool call {cid!r} is not answered", self.open_at)
                for cid in sorted(self.open_calls)
            )
        self.open_calls, self.open_at = set(), None
        role = message.role
        if role in ("user", "assistant"):
            if role == self.last_side:
                self.problems.append(
                    Problem("roles_not_alternating", f"two {role} messages in a row", i)
                )
            self.last_side = role
        self.problems.extend(_chat_content(i, message))
        calls = [c.id for c in message.of_kind(ToolCall)]
        self.every_call.update(calls)
        if calls:
            self.open_calls, self.open_at = set(calls), i
            self.last_side = "assistant"


def _chat_content(i: int, message: Message) -> list[Problem]:
    """What a chat message that is no tool message may not hold, or must."""
    problems: list[Problem] = []
    if any(isinstance(b, ToolResult) for b in message.blocks):
        problems.append(Problem("misplaced_result", "a tool result outside a tool message", i))
    if message.role != "assistant" and any(isinstance(b, ToolCall) for b in message.blocks):
        problems.append(Problem("misplaced_call", "a tool call outside an assistant turn", i))
    if not any(isinstance(b, Text | ToolCall) for b in message.blocks) and not any(
        b.kind == "other" for b in message.blocks
    ):
        problems.append(Problem("empty_content", "a message with no content", i))
    return problems


# ------------------------------------------------------------------------- openai-responses


def _responses(messages: Sequence[Message]) -> list[Problem]:
    """Responses input: calls and outputs linked by ``call_id`` anywhere later in the input
    (no alternation rule); a call in the last message is pending."""
    if not messages:
        return [Problem("no_messages", "the request has no messages")]
    problems: list[Problem] = []
    every_call: set[str] = set()
    answered = {r.call_id for m in messages for r in m.of_kind(ToolResult)}
    all_calls = {c.id for m in messages for c in m.of_kind(ToolCall)}
    for i, message in enumerate(messages):
        if message.role not in _RESPONSES_ROLES:
            problems.append(Problem("bad_role", f"role {message.role!r} is not an input role", i))
        if not message.blocks:
            problems.append(Problem("empty_content", "a message with no content", i))
        problems.extend(_empty_texts(i, message))
        calls = list(message.of_kind(ToolCall))
        results = list(message.of_kind(ToolResult))
        if calls and message.role != "assistant":
            problems.append(Problem("misplaced_call", "a tool call outside an assistant turn", i))
        if results and message.role != "tool":
            problems.append(Problem("misplaced_result", "a tool output outside the outputs", i))
        problems.extend(_orphans(i, results, every_call, all_calls))
        every_call.update(c.id for c in calls)
        if i + 1 < len(messages):
            problems.extend(
                Problem("unanswered_call", f"tool call {c.id!r} ({c.name}) has no output", i)
                for c in calls
                if c.id not in answered
            )
    return problems


_RULES: dict[str, Callable[[Sequence[Message]], list[Problem]]] = {
    "anthropic": _anthropic,
    "openai-chat": _openai,
    "openai-responses": _responses,
}
PROVIDERS = tuple(_RULES)

__all__ = ["PROBLEM_CODES", "PROVIDERS", "Problem", "ProblemCode", "validate"]
