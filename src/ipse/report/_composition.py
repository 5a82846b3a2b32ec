"""What fills each request's context, by kind of block and by tool: the token counts behind the
report's composition bands and its list of the heaviest tools.

Messages repeat from one request to the next. Requests that are views of one shared list (a
session's turns, a rollout's calls: `SharedHistory`) are summed along that list (`History`),
each item read and counted once and the sums carried from one view to the next, so a session of
n turns costs n items, not n² (a 250 MB session took about 40 minutes before); other requests
are read whole, their token counts memoised by the message's provider JSON (`Composition`).
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from ipse import jsonio
from ipse._tokens import default_counter
from ipse.errors import IpseError
from ipse.handoff._shared import CHECKPOINT_TOOL
from ipse.prefix import Request
from ipse.prefix._shared import SharedHistory
from ipse.transcript import Conversation, Message, Text, ToolCall
from ipse.transcript._shared import (
    TokenTally,
    as_harness,
    block_kind,
    body_codec,
    counted_text,
    read_item,
)

# What fills the context, in drawing order (bottom to top).
CONTEXT_KINDS = (
    "not_recorded",
    "system",
    "tools",
    "human_text",
    "agent_text",
    "harness_text",
    "tool_calls",
    "tool_results",
    "thinking",
    "other",
)


class Composition:
    """Tokens by kind of one request body, memoised per distinct message; requests that are
    views of one shared list (`SharedHistory`: a session's turns, a rollout's calls) are
    summed along that list (`History`), each item read and counted once."""

    def __init__(self, requests: Sequence[Request] = ()) -> None:
        self._tally = TokenTally(default_counter())
        self._messages: dict[bytes, list[tuple[str, int, str | None, str | None]]] = {}
        self._fronts: dict[bytes, dict[str, int]] = {}
        self._longest: dict[int, int] = {}  # id(shared list) -> the most items a view takes
        for request in requests:
            if isinstance(request.body, SharedHistory):
                key = id(request.body.base)
                self._longest[key] = max(self._longest.get(key, 0), request.body.count)
        self._histories: dict[int, History | None] = {}
        # id(shared list) -> [the list, items searched, first item naming the checkpoint tool]
        self._mentions: dict[int, list[Any]] = {}

    def history(self, request: Request) -> History | None:
        """The shared list ``request`` is a view of, read once (None: not a view, or a list
        this reading does not cover: the request is read whole)."""
        body = request.body
        if not isinstance(body, SharedHistory) or id(body.base) not in self._longest:
            return None
        key = id(body.base)
        if key not in self._histories:
            self._histories[key] = History.read(request, self._longest[key], self._tally)
        found = self._histories[key]
        return found if found is not None and found.base is body.base else None

    def of(self, request: Request) -> tuple[dict[str, int], dict[str, int]]:
        history = self.history(request)
        summed = self._summed(request, history) if history is not None else None
        if history is not None and summed is not None:
            kinds = dict.fromkeys(CONTEXT_KINDS, 0)
            for name, count in self._front(request, history.front).items():
                kinds[name] += count
            by_kind, shared_tools = summed
            for name, count in by_kind.items():
                kinds[name] += count
            return kinds, shared_tools
        conversation = conversation_of(request)
        kinds = dict.fromkeys(CONTEXT_KINDS, 0)
        tools: dict[str, int] = {}
        for name, count in self._front(request, conversation).items():
            kinds[name] += count
        names = call_names(conversation.messages)
        for message in conversation.messages:
            for kind, count, call_name, result_of in self._message(message):
                kinds[kind] += count
                tool = call_name if result_of is None else names.get(result_of, UNKNOWN_TOOL)
                if tool is not None:
                    tools[tool] = tools.get(tool, 0) + count
        return kinds, tools

    def _summed(
        self, request: Request, history: History
    ) -> tuple[dict[str, int], dict[str, int]] | None:
        """Tokens by kind and by tool of a view's items, its tail's added (None: a tail that
        calls tools, which would name the list's results anew: the request is read whole)."""
        body = request.body
        assert isinstance(body, SharedHistory)
        kinds, tools = history.sums(body.count)
        if not body.tail:
            return kinds, tools
        groups = _tail_groups(request)
        if groups is None:
            return None
        for _, _, blocks in groups:
            for block in blocks:
                count = self._tally.count(counted_text(block))
                kind = block_kind(block)
                kinds[kind] = kinds.get(kind, 0) + count
                answered = call_and_result(block)[1]
                tool = history.call_name(answered, body.count) if answered else None
                if tool is not None:
                    tools[tool] = tools.get(tool, 0) + count
        return kinds, tools

    def human_turn(self, request: Request) -> bool:
        """Whether the request's last message holds the human's words."""
        history = self.history(request)
        body = request.body
        if history is None or not isinstance(body, SharedHistory):
            return human_turn_of(request)
        if not body.tail:
            return history.human_turn(body.count)
        groups = _tail_groups(request)
        if groups is None:
            return human_turn_of(request)
        start, role, _ = groups[-1]
        return role == "user" and any(
            isinstance(b, Text) and b.origin.value == "human"
            for _, _, blocks in groups[start:]
            for b in blocks
        )

    def mentions_checkpoint(self, request: Request) -> bool:
        """Whether the request's history names the checkpoint tool anywhere (the name cannot
        span two items of the list, so a shared list is searched item by item, once)."""
        needle = CHECKPOINT_TOOL.encode()
        body = request.body
        if not isinstance(body, SharedHistory):
            return needle in jsonio.dumps(raw_messages(request))
        state = self._mentions.get(id(body.base))
        if state is None or state[0] is not body.base:
            state = self._mentions[id(body.base)] = [body.base, 0, None]
        base, searched, found = state
        if found is None and searched < body.count:
            for i in range(searched, body.count):
                if needle in jsonio.dumps(base[i]):
                    found = state[2] = i
                    break
            state[1] = max(searched, body.count)
        if found is not None and found < body.count:
            return True
        return any(needle in jsonio.dumps(message) for message in body.tail)

    def _front(self, request: Request, conversation: Conversation) -> dict[str, int]:
        key = _digest({k: request.body.get(k) for k in ("system", "tools", "instructions")})
        if key not in self._fronts:
            tally = self._tally.fresh()
            tally.add_front(conversation)
            self._fronts[key] = {"system": tally.by_kind["system"], "tools": tally.by_kind["tools"]}
        return self._fronts[key]

    def _message(self, message: Message) -> list[tuple[str, int, str | None, str | None]]:
        """Per block: its kind, its tokens, the tool it calls, the call it answers (whose
        tool each request names from its own calls)."""
        key = _digest([message.role, message.raw, [_identity(b) for b in message.blocks]])
        cached = self._messages.get(key)
        if cached is None:
            cached = [
                (block_kind(b), self._tally.count(counted_text(b)), *call_and_result(b))
                for b in message.blocks
            ]
            self._messages[key] = cached
        return cached


class History:
    """One shared list of messages (or Responses input items) read once, up to the most
    items any view of it takes: per item, the tokens its blocks add by kind and by tool (a
    result's tool from the calls before it, `_result_tools`), and the sums over the first
    ``count`` items, carried forward from the previous view (views come in order, each
    extending the one before: the cost follows the new items, not the history).

    What a view sums is what reading it whole gives: the blocks of the items before
    ``count``. Anthropic messages are one item each; Responses items are grouped into
    messages, and a view may cut the last group, whose blocks are then the first items'. A
    journaled request's breakpoints are not part of the list: a ``cache_control`` on an
    image or document block is not counted as its content (read whole, it was)."""

    def __init__(
        self,
        base: list[Any],
        front: Conversation,
        items: list[list[tuple[str, int, str | None, bool]]],
        roles: list[str],
        starts: list[int],
        calls: dict[str, tuple[list[int], list[str]]],
    ) -> None:
        self.base = base
        self.front = front
        self._items = items  # per item: (kind, tokens, tool, human text) per block
        self._roles = roles  # per item: the role of the message holding it
        self._starts = starts  # per item: where its message's items begin
        self._calls = calls  # per call id: the items calling it, and the name each gives
        self._done = 0
        self._kinds: dict[str, int] = {}
        self._tools: dict[str, int] = {}

    @classmethod
    def read(cls, request: Request, count: int, tally: TokenTally) -> History | None:
        body = request.body
        assert isinstance(body, SharedHistory)
        codec = body_codec(body, request.provider)
        front = dict(body.front)
        front[body.key] = []
        try:
            whole = codec.read_body({**front, body.key: body.base[:count]})
            front_conversation = codec.read_body(front)
        except IpseError:
            return None  # read whole, per request, as any body
        groups = _item_blocks(whole.messages, body.key)
        if groups is None or len(groups) != count:
            return None
        tools = _result_tools(groups)
        if tools is None:
            return None
        calls: dict[str, tuple[list[int], list[str]]] = {}  # call id -> its items, its names
        for i, (_, _, blocks) in enumerate(groups):
            for block in blocks:
                if isinstance(block, ToolCall):
                    places, names = calls.setdefault(block.id, ([], []))
                    places.append(i)
                    names.append(block.name)
        items: list[list[tuple[str, int, str | None, bool]]] = []
        roles: list[str] = []
        starts: list[int] = []
        for i, (start, role, blocks) in enumerate(groups):
            entries = []
            harness = i in body.harness  # text the session marks as the agent CLI's
            for block in blocks:
                call_name, result_of = call_and_result(block)
                text = isinstance(block, Text)
                entries.append(
                    (
                        "harness_text" if harness and text else block_kind(block),
                        tally.count(counted_text(block)),
                        call_name if result_of is None else tools[i, result_of],
                        text and not harness and block.origin.value == "human",
                    )
                )
            items.append(entries)
            roles.append(role)
            starts.append(start)
        return cls(body.base, front_conversation, items, roles, starts, calls)

    def sums(self, count: int) -> tuple[dict[str, int], dict[str, int]]:
        """Tokens by kind and by tool of the first ``count`` items."""
        if count < self._done:  # a view shorter than the last: sum again from the start
            self._done, self._kinds, self._tools = 0, {}, {}
        kinds, tools = self._kinds, self._tools
        for blocks in self._items[self._done : count]:
            for kind, tokens, tool, _ in blocks:
                kinds[kind] = kinds.get(kind, 0) + tokens
                if tool is not None:
                    tools[tool] = tools.get(tool, 0) + tokens
        self._done = max(self._done, count)
        return dict(kinds), dict(tools)

    def call_name(self, call_id: str, count: int) -> str:
        """The tool a result of ``call_id`` after the first ``count`` items answers: the last
        call with that id among them (as reading them whole names it)."""
        places, names = self._calls.get(call_id, ((), ()))
        k = bisect.bisect_left(places, count)
        return names[k - 1] if k else UNKNOWN_TOOL

    def human_turn(self, count: int) -> bool:
        """Whether the last message of the first ``count`` items holds the human's words."""
        if count <= 0:
            return False
        last = count - 1
        if self._roles[last] != "user":
            return False
        return any(
            human for blocks in self._items[self._starts[last] : count] for *_, human in blocks
        )


def _item_blocks(
    messages: Sequence[Message], key: str
) -> list[tuple[int, str, tuple[Any, ...]]] | None:
    """Per item of the list read: where its message's items start, that message's role, and
    the item's own blocks (None: the reading does not say which blocks came from which
    item)."""
    out: list[tuple[int, str, tuple[Any, ...]]] = []
    for message in messages:
        if key == "messages":  # one message per item
            out.append((len(out), message.role, message.blocks))
            continue
        members = message.meta.get("items")
        if not isinstance(members, tuple) or not members:
            return None
        start = len(out)
        at = 0
        for item in members:
            size = len(read_item(item, message.role))
            out.append((start, message.role, message.blocks[at : at + size]))
            at += size
        if at != len(message.blocks):
            return None
    return out


def _result_tools(
    groups: Sequence[tuple[int, str, tuple[Any, ...]]],
) -> dict[tuple[int, str], str] | None:
    """The tool of each result, by (item, call id): a request reading its items whole names it
    from the last call with that id among them, so it is fixed for every view only when no
    later item calls that id under another name (or first calls an id answered before it is
    called); None when some result's tool would change from one view to the next."""
    places: dict[str, list[int]] = {}  # call id -> the items calling it, in order
    names: dict[str, list[str]] = {}  # ... and the name each gives
    for i, (_, _, blocks) in enumerate(groups):
        for block in blocks:
            if isinstance(block, ToolCall):
                places.setdefault(block.id, []).append(i)
                names.setdefault(block.id, []).append(block.name)
    # per call id, from each of its calls on: the one name they all give, else None
    same_from: dict[str, list[str | None]] = {}
    for call_id, given in names.items():
        tail: list[str | None] = [None] * len(given)
        tail[-1] = given[-1]
        for k in range(len(given) - 2, -1, -1):
            tail[k] = given[k] if tail[k + 1] == given[k] else None
        same_from[call_id] = tail
    tools: dict[tuple[int, str], str] = {}
    for i, (_, _, blocks) in enumerate(groups):
        for block in blocks:
            answered = call_and_result(block)[1]
            if answered is None or (i, answered) in tools:
                continue
            at = places.get(answered, [])
            k = bisect.bisect_right(at, i)  # the calls in items up to this one: at[:k]
            name = names[answered][k - 1] if k else UNKNOWN_TOOL
            if k < len(at) and same_from[answered][k] != name:
                return None  # a later item calls it under another name (or first calls it)
            tools[i, answered] = name
    return tools


def _tail_groups(request: Request) -> list[tuple[int, str, tuple[Any, ...]]] | None:
    """The blocks of a view's tail, item by item (`_item_blocks`), read with the view's front;
    None where that reading does not give one item per tail item, or the tail calls tools."""
    body = request.body
    assert isinstance(body, SharedHistory)
    codec = body_codec(body, request.provider)
    try:
        read = codec.read_body({**body.front, body.key: list(body.tail)})
    except IpseError:
        return None
    groups = _item_blocks(read.messages, body.key)
    if groups is None or len(groups) != len(body.tail):
        return None
    if any(isinstance(b, ToolCall) for _, _, blocks in groups for b in blocks):
        return None
    return groups


def conversation_of(request: Request) -> Conversation:
    """The request's body read, with the text a session marks as the agent CLI's
    (`SharedHistory.harness`) made the agent CLI's."""
    body = request.body
    conversation = body_codec(body, request.provider).read_body(body)
    if not isinstance(body, SharedHistory) or body.key != "messages" or not body.harness:
        return conversation
    messages = list(conversation.messages)
    for i in body.harness:
        if i < min(body.count, len(messages)):
            messages[i] = as_harness(messages[i])
    return dataclasses.replace(conversation, messages=tuple(messages))


def raw_messages(request: Request) -> list[Any]:
    """The body's history as the provider's items (``messages``, or a Responses ``input``)."""
    messages = request.body.get("messages", request.body.get("input"))
    return list(messages) if isinstance(messages, list) else []


def _identity(block: Any) -> Any:
    """What tells a block apart: its provider dict, else (a string content) its text."""
    return block.raw if block.raw is not None else counted_text(block)


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(jsonio.dumps(value), digest_size=16).digest()


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolCall)}


UNKNOWN_TOOL = "(unknown tool)"


def call_and_result(block: Any) -> tuple[str | None, str | None]:
    """The tool a block calls (a call), or the call it answers (a result); else (None, None)."""
    if isinstance(block, ToolCall):
        return block.name, None
    call_id = getattr(block, "call_id", None)
    return (None, call_id) if isinstance(call_id, str) else (None, None)


def human_turn_of(request: Request) -> bool:
    messages = raw_messages(request)
    if not messages:
        return False
    conversation = conversation_of(request)
    last = conversation.messages[-1] if conversation.messages else None
    return bool(
        last is not None
        and last.role == "user"
        and any(isinstance(b, Text) and b.origin.value == "human" for b in last.blocks)
    )


__all__ = [
    "CONTEXT_KINDS",
    "UNKNOWN_TOOL",
    "Composition",
    "History",
    "call_and_result",
    "call_names",
    "conversation_of",
    "human_turn_of",
    "raw_messages",
]
