"""The numbers behind the report: one point per request, and the totals.

Every number comes from the library: the requests from `ipse.prefix.read_requests` (a session, a
request log or a proxy record), the cache per request from `ipse.prefix.analyze` (recorded usage
where the input has it, the provider's cache model otherwise, and which one each row is), what
fills the context from `ipse.transcript`'s token tally by kind, and a handoff's pay-back from
`ipse.handoff.break_even`. Nothing here draws; `_svg` and `_page` do.

Messages repeat from one request to the next. Requests that are views of one shared list (a
session's turns, a rollout's calls: `SharedHistory`) are summed along that list, each item read
and counted once and the sums carried from one view to the next, so a session of n turns costs
n items, not n² (a 250 MB session took about 40 minutes before); other requests are read whole,
their token counts memoised by the message's provider JSON.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import IpseError
from ipse.handoff import CHECKPOINT_TOOL, RATES, CacheRates, break_even, is_checkpoint
from ipse.prefix import (
    UNRECORDED_FRONT,
    PrefixReport,
    Request,
    RequestLog,
    SharedHistory,
    analyze,
    prices,
    read_requests,
    rules,
)
from ipse.tokens import default_counter, tokenizer_label
from ipse.transcript import (
    FORMAT_TABLE,
    WRITABLE_FORMATS,
    Conversation,
    Message,
    Shape,
    Text,
    TokenTally,
    ToolCall,
    block_kind,
    body_codec,
    codec,
    counted_text,
    detect,
)
from ipse.transcript.formats.openai_responses import read_item

Progress = Callable[[Iterable[Any]], Iterable[Any]]

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
REMOVABLE = ("tool_calls", "tool_results", "thinking")  # what a handoff takes out
# Inputs that do not record the whole request: a Claude Code session without its journal (no
# system prompt, no tool definitions: `UNRECORDED_FRONT` stands for them) and a Codex rollout
# (no tool definitions). What the recorded usage holds beyond what is counted is shown as the
# ``not_recorded`` band, so the composition adds up to the context size.
_PARTLY_RECORDED = tuple(f.name for f in FORMAT_TABLE if f.unrecorded)
_LOGS = tuple(f.name for f in FORMAT_TABLE if f.shape is Shape.LOG)  # the proxy's record among them
DROP = 0.3  # a request this much smaller than the one before marks a reset of the context
_COMPACTED = "continued from a previous conversation"  # how a compaction summary opens


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One request: its size, what fills it, what the cache did, and why reuse was lost."""

    index: int
    time: datetime | None
    model: str | None
    context_tokens: int
    composition: Mapping[str, int]
    tool_tokens: Mapping[str, int]
    cache_read: int
    cache_write: int
    uncached: int
    cache_source: str  # recorded | predicted
    cause: str | None
    cause_detail: str | None
    lost_tokens: int
    cost_lost_usd: float
    marker: str | None  # compaction | handoff | reset
    human_turn: bool  # the newest input is the human's own words
    cost_usd: float = 0.0  # the request's input cost (`ipse.prefix.Row.cost_usd`)
    price_usd: float = 0.0  # the model's base price of one input token
    read_multiplier: float = 0.0  # a cached token's share of that price
    conversation: str | None = None  # its conversation (`ipse.prefix.Row.conversation`)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "time": self.time.isoformat() if self.time else None,
            "model": self.model,
            "context_tokens": self.context_tokens,
            "composition": dict(self.composition),
            "cache": {
                "read": self.cache_read,
                "write": self.cache_write,
                "uncached": self.uncached,
                "source": self.cache_source,
            },
            "cause": self.cause,
            "cause_detail": self.cause_detail,
            "lost_tokens": self.lost_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "cost_lost_usd": round(self.cost_lost_usd, 6),
            "marker": self.marker,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffSaving:
    """What a handoff at one natural checkpoint (a new human turn) would have saved."""

    index: int
    tokens_now: int
    removable: int
    later_requests: int
    break_even_turns: int | None
    saved_tokens: int  # base-price input tokens over the rest of the session
    saved_usd: float
    # what a handoff here keeps of the facts the agent used next (`ipse.probe.continuity`
    # at the matching cut of the session); None where not probed
    continuity: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tokens_now": self.tokens_now,
            "removable_tokens": self.removable,
            "later_requests": self.later_requests,
            "break_even_turns": self.break_even_turns,
            "saved_tokens": self.saved_tokens,
            "saved_usd": round(self.saved_usd, 4),
            "continuity": dict(self.continuity) if self.continuity is not None else None,
        }


@dataclass(frozen=True, kw_only=True)
class ReportData:
    """Everything the page shows."""

    source: str
    format: str
    provider: str
    tokens_by: str
    points: tuple[Point, ...]
    summary: Mapping[str, Any]
    top_tools: tuple[tuple[str, int], ...]
    checkpoints: tuple[HandoffSaving, ...]
    command: str
    warnings: tuple[str, ...] = field(default=())
    # why the input has no requests to replay (a harness file that records one conversation,
    # not the requests sent): the prompt cache and the handoff sections are then empty
    no_requests: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "provider": self.provider,
            "tokens_estimated_by": self.tokens_by,
            "command": self.command,
            "no_requests": self.no_requests,
            "summary": dict(self.summary),
            "requests": [p.to_json() for p in self.points],
            "top_tools": [{"tool": t, "tokens": n} for t, n in self.top_tools],
            "checkpoints": [c.to_json() for c in self.checkpoints],
            "warnings": list(self.warnings),
        }


def collect(
    path: str,
    *,
    format: str | None = None,
    provider: str | None = None,
    command: str = "",
    progress: Progress | None = None,
) -> ReportData:
    """Read ``path`` and compute every number the report shows."""
    name = format or (detect(path) if Path(path).exists() else None)
    if name is not None and name not in WRITABLE_FORMATS and name not in _LOGS:
        return _conversation_only(path, name, command)
    log = read_requests(path, format)
    report = analyze(log.requests, provider, progress=progress, warnings=log.warnings)
    tally = _Composition(log.requests)
    applied = _proxy_handoffs(log) if log.format in _LOGS else frozenset()
    points = tuple(_points(log, report, tally, applied))
    return ReportData(
        source=str(log.path),
        format=log.format,
        provider=report.provider,
        tokens_by=report.tokens_by,
        points=points,
        summary=report.summary(),
        top_tools=_top_tools(points),
        checkpoints=_with_continuity(
            tuple(_checkpoints(points, report.provider)), log, path, format
        ),
        command=command,
        warnings=tuple(report.warnings),
    )


def _with_continuity(
    checkpoints: tuple[HandoffSaving, ...], log: RequestLog, path: str, format: str | None
) -> tuple[HandoffSaving, ...]:
    """The checkpoints, the `SHOWN` largest savings with what a handoff there keeps of the
    facts the agent used next (sessions only: a log of requests is not one timeline)."""
    if log.format in _LOGS or not checkpoints:
        return checkpoints
    from dataclasses import replace

    from ipse.report._continuity import SHOWN, at_checkpoints

    by_index = {r.index: r for r in log.requests}
    shown = sorted(checkpoints, key=lambda c: -c.saved_usd)[:SHOWN]
    anchors = []
    for checkpoint in shown:
        request = by_index.get(checkpoint.index)
        if request is None or request.agent is not None:
            continue
        messages = _conversation(request).messages
        if messages:
            anchors.append((checkpoint.index, messages[-1]))
    found = at_checkpoints(path, format or log.format, anchors)
    return tuple(
        replace(c, continuity=found[c.index]) if c.index in found else c for c in checkpoints
    )


def _conversation_only(path: str, name: str, command: str) -> ReportData:
    """The report of an input that holds one conversation but not the requests that carried
    it (OpenHands events, Gemini CLI sessions): what fills it, as one point; nothing about the
    prompt cache or handoffs, which need the requests, and the page says so."""
    from ipse.transcript import load

    source = load(path, name)
    conversation = source.current()
    tally = TokenTally(default_counter())
    tally.add_conversation(conversation)
    composition = {kind: tally.by_kind.get(kind, 0) for kind in CONTEXT_KINDS}
    names = _call_names(conversation.messages)
    tools: dict[str, int] = {}
    for message in conversation.messages:
        for block in message.blocks:
            call_name, result_of = _call_and_result(block)
            tool = call_name if result_of is None else names.get(result_of, _UNKNOWN_TOOL)
            if tool is not None:
                tools[tool] = tools.get(tool, 0) + tally.count(counted_text(block))
    point = Point(
        index=0,
        time=None,
        model=conversation.model,
        context_tokens=sum(composition.values()),
        composition=composition,
        tool_tokens=tools,
        cache_read=0,
        cache_write=0,
        uncached=0,
        cache_source="not recorded",
        cause=None,
        cause_detail=None,
        lost_tokens=0,
        cost_lost_usd=0.0,
        marker=None,
        human_turn=False,
    )
    return ReportData(
        source=str(path),
        format=name,
        provider=codec(conversation.dialect).provider,
        tokens_by=tokenizer_label(default_counter(), conversation.model),
        points=(point,),
        summary={"requests": 0, "hit_rate": 0.0, "cost_usd": 0.0, "cost_lost_usd": 0.0},
        top_tools=_top_tools((point,)),
        checkpoints=(),
        command=command,
        warnings=tuple(source.warnings),
        no_requests=(
            f"this {name} file records the conversation, not the requests sent to the model: "
            "the whole conversation is shown as one point, and there is no prompt cache to "
            "replay and no sequence of requests to hand off in"
        ),
    )


class _Composition:
    """Tokens by kind of one request body, memoised per distinct message; requests that are
    views of one shared list (`SharedHistory`: a session's turns, a rollout's calls) are
    summed along that list (`_History`), each item read and counted once."""

    def __init__(self, requests: Sequence[Request] = ()) -> None:
        self._tally = TokenTally(default_counter())
        self._messages: dict[bytes, list[tuple[str, int, str | None, str | None]]] = {}
        self._fronts: dict[bytes, dict[str, int]] = {}
        self._longest: dict[int, int] = {}  # id(shared list) -> the most items a view takes
        for request in requests:
            if isinstance(request.body, SharedHistory):
                key = id(request.body.base)
                self._longest[key] = max(self._longest.get(key, 0), request.body.count)
        self._histories: dict[int, _History | None] = {}
        # id(shared list) -> [the list, items searched, first item naming the checkpoint tool]
        self._mentions: dict[int, list[Any]] = {}

    def history(self, request: Request) -> _History | None:
        """The shared list ``request`` is a view of, read once (None: not a view, or a list
        this reading does not cover: the request is read whole)."""
        body = request.body
        if not isinstance(body, SharedHistory) or id(body.base) not in self._longest:
            return None
        key = id(body.base)
        if key not in self._histories:
            self._histories[key] = _History.read(request, self._longest[key], self._tally)
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
        conversation = _conversation(request)
        kinds = dict.fromkeys(CONTEXT_KINDS, 0)
        tools: dict[str, int] = {}
        for name, count in self._front(request, conversation).items():
            kinds[name] += count
        names = _call_names(conversation.messages)
        for message in conversation.messages:
            for kind, count, call_name, result_of in self._message(message):
                kinds[kind] += count
                tool = call_name if result_of is None else names.get(result_of, _UNKNOWN_TOOL)
                if tool is not None:
                    tools[tool] = tools.get(tool, 0) + count
        return kinds, tools

    def _summed(
        self, request: Request, history: _History
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
                answered = _call_and_result(block)[1]
                tool = history.call_name(answered, body.count) if answered else None
                if tool is not None:
                    tools[tool] = tools.get(tool, 0) + count
        return kinds, tools

    def human_turn(self, request: Request) -> bool:
        """Whether the request's last message holds the human's words."""
        history = self.history(request)
        body = request.body
        if history is None or not isinstance(body, SharedHistory):
            return _human_turn(request)
        if not body.tail:
            return history.human_turn(body.count)
        groups = _tail_groups(request)
        if groups is None:
            return _human_turn(request)
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
            return needle in jsonio.dumps(_raw_messages(request))
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
                (block_kind(b), self._tally.count(counted_text(b)), *_call_and_result(b))
                for b in message.blocks
            ]
            self._messages[key] = cached
        return cached


class _History:
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
    def read(cls, request: Request, count: int, tally: TokenTally) -> _History | None:
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
            for block in blocks:
                call_name, result_of = _call_and_result(block)
                entries.append(
                    (
                        block_kind(block),
                        tally.count(counted_text(block)),
                        call_name if result_of is None else tools[i, result_of],
                        isinstance(block, Text) and block.origin.value == "human",
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
        return names[k - 1] if k else _UNKNOWN_TOOL

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
            answered = _call_and_result(block)[1]
            if answered is None or (i, answered) in tools:
                continue
            at = places.get(answered, [])
            k = bisect.bisect_right(at, i)  # the calls in items up to this one: at[:k]
            name = names[answered][k - 1] if k else _UNKNOWN_TOOL
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


def _conversation(request: Request) -> Conversation:
    return body_codec(request.body, request.provider).read_body(request.body)


def _raw_messages(request: Request) -> list[Any]:
    """The body's history as the provider's items (``messages``, or a Responses ``input``)."""
    messages = request.body.get("messages", request.body.get("input"))
    return list(messages) if isinstance(messages, list) else []


def _identity(block: Any) -> Any:
    """What tells a block apart: its provider dict, else (a string content) its text."""
    return block.raw if block.raw is not None else counted_text(block)


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(jsonio.dumps(value), digest_size=16).digest()


def _call_names(messages: Sequence[Message]) -> dict[str, str]:
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolCall)}


_UNKNOWN_TOOL = "(unknown tool)"


def _call_and_result(block: Any) -> tuple[str | None, str | None]:
    """The tool a block calls (a call), or the call it answers (a result); else (None, None)."""
    if isinstance(block, ToolCall):
        return block.name, None
    call_id = getattr(block, "call_id", None)
    return (None, call_id) if isinstance(call_id, str) else (None, None)


def _proxy_handoffs(log: RequestLog) -> frozenset[str]:
    """The requests (by where they stand in the log) that an ipse proxy rewrote at a
    checkpoint: its record says so (``ipse.handoff.applied``), whatever the handoff's size."""
    from ipse.transcript.formats import http_log

    found = set()
    for where, entry in http_log.iter_entries(log.path):
        extra = entry.get("ipse")
        handoff = extra.get("handoff") if isinstance(extra, Mapping) else None
        if isinstance(handoff, Mapping) and handoff.get("applied") is True:
            found.add(where)
    return frozenset(found)


def _points(
    log: RequestLog,
    report: PrefixReport,
    tally: _Composition,
    applied: frozenset[str] = frozenset(),
) -> Iterable[Point]:
    previous: dict[str | None, int] = {}  # conversation -> its last request's context
    table = prices()
    rates: dict[str | None, tuple[float, float]] = {}  # model -> (price, read multiplier)
    cache_rules = rules(report.provider)
    for request, row in zip(log.requests, report.rows, strict=True):
        composition, tools = tally.of(request)
        cache = row.actual or row.predicted
        unseen = request.body.get("system") is UNRECORDED_FRONT
        if unseen:
            composition["system"] = 0  # (the placeholder's own words are not the prompt)
        counted = sum(composition.values())
        context = cache.total or counted
        if unseen or log.format in _PARTLY_RECORDED:
            composition["not_recorded"] = max(0, context - counted)
        marker = "handoff" if request.source in applied else None
        marker = marker or _marker(request, previous.get(row.conversation, 0), context, tally)
        previous[row.conversation] = context
        if row.model not in rates:
            price = table.price(row.model, report.provider)[0] / 1_000_000
            rates[row.model] = (price, cache_rules.read_multiplier(row.model))
        yield Point(
            index=row.index,
            time=row.time,
            model=row.model,
            context_tokens=context,
            composition=composition,
            tool_tokens=tools,
            cache_read=cache.cache_read,
            cache_write=cache.cache_write,
            uncached=cache.uncached,
            cache_source="recorded" if row.actual is not None else "predicted",
            cause=row.cause.kind if row.cause else None,
            cause_detail=row.cause.detail if row.cause else None,
            lost_tokens=row.lost_tokens,
            cost_lost_usd=row.cost_lost_usd,
            marker=marker,
            human_turn=tally.human_turn(request),
            cost_usd=row.cost_usd,
            price_usd=rates[row.model][0],
            read_multiplier=rates[row.model][1],
            conversation=row.conversation,
        )


def _marker(request: Request, previous: int, context: int, tally: _Composition) -> str | None:
    """compaction, handoff or reset where the context shrank by `DROP` or more."""
    if not previous or context > previous * (1 - DROP):
        return None
    if tally.mentions_checkpoint(request):
        return "handoff"
    body = request.body
    first = body.head(2) if isinstance(body, SharedHistory) else _raw_messages(request)[:2]
    if _COMPACTED.encode() in jsonio.dumps(first):
        return "compaction"
    return "reset"


def _human_turn(request: Request) -> bool:
    messages = _raw_messages(request)
    if not messages:
        return False
    conversation = _conversation(request)
    last = conversation.messages[-1] if conversation.messages else None
    return bool(
        last is not None
        and last.role == "user"
        and any(isinstance(b, Text) and b.origin.value == "human" for b in last.blocks)
    )


def _top_tools(points: Sequence[Point], limit: int = 12) -> tuple[tuple[str, int], ...]:
    """The tools whose calls and results weigh most in the last request of the log."""
    if not points:
        return ()
    last = points[-1].tool_tokens
    return tuple(sorted(last.items(), key=lambda item: (-item[1], item[0]))[:limit])


def _checkpoints(points: Sequence[Point], provider: str) -> Iterable[HandoffSaving]:
    """At each new human turn: what a handoff there would have saved over the requests that
    follow it, up to the next compaction, handoff or reset (which removes those tokens anyway).

    A later request saves the removed tokens it would have read from the cache (never more
    than its context, at its own model's read price) and never more than it cost; the
    handoff's own request pays for writing the shorter prefix. So a saving never exceeds what
    the requests after it cost. The checkpoint tool's own call and result are not removable
    (a handoff keeps them): a turn whose only tool traffic they are suggests nothing."""
    rates = RATES["anthropic-5m" if provider == "anthropic" else "openai"]
    ends = _segment_ends(points)
    for position, point in enumerate(points):
        if not point.human_turn or position == 0:
            continue
        kept = sum(n for name, n in point.tool_tokens.items() if is_checkpoint(name))
        removable = sum(point.composition.get(kind, 0) for kind in REMOVABLE) - kept
        if removable <= 0:
            continue
        tokens_now = point.context_tokens
        end = ends[position]
        own = CacheRates(write=rates.write, read=point.read_multiplier)
        turns, _, extra = break_even(tokens_now, tokens_now - removable, 1.0, own)
        saved_tokens = -max(0.0, extra)  # base-price tokens: the rewrite's own write first
        saved_usd = saved_tokens * point.price_usd
        later = [p for p in points[position + 1 : end] if p.conversation == point.conversation]
        for after in later:
            gone = min(removable, after.context_tokens) * after.read_multiplier
            saved_tokens += gone
            saved_usd += min(gone * after.price_usd, after.cost_usd)
        yield HandoffSaving(
            index=point.index,
            tokens_now=tokens_now,
            removable=removable,
            later_requests=len(later) + 1,
            break_even_turns=turns,
            saved_tokens=max(0, round(saved_tokens)),
            saved_usd=max(0.0, saved_usd),
        )


def _segment_ends(points: Sequence[Point]) -> list[int]:
    """Per point: the position of the next marked point of its conversation after it (or the
    end)."""
    ends = [len(points)] * len(points)
    end: dict[str | None, int] = {}  # conversation -> its next marked point's position
    for position in range(len(points) - 1, -1, -1):
        conversation = points[position].conversation
        ends[position] = end.get(conversation, len(points))
        if points[position].marker is not None:
            end[conversation] = position
    return ends


__all__ = ["CONTEXT_KINDS", "HandoffSaving", "Point", "ReportData", "collect"]
