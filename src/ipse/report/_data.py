"""The numbers behind the report: one point per request, and the totals.

Every number comes from the library: the requests from `ipse.prefix.read_requests` (a session, a
request log or a proxy record), the cache per request from `ipse.prefix.analyze` (recorded usage
where the input has it, the provider's cache model otherwise, and which one each row is), what
fills the context from `ipse.transcript`'s token tally by kind, and a handoff's pay-back from
`ipse.handoff.break_even`. Nothing here draws; `_svg` and `_page` do.

Messages repeat from one request to the next, so their token counts are memoised by the
message's provider JSON: the tally costs about one pass over the distinct messages, not one per
request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ipse import jsonio
from ipse.handoff import CHECKPOINT_TOOL, RATES, break_even
from ipse.prefix import PrefixReport, Request, RequestLog, analyze, prices, read_requests
from ipse.tokens import default_counter
from ipse.transcript import Conversation, Message, Text, ToolCall
from ipse.transcript._codec import body_codec
from ipse.transcript._stats import TokenTally, block_kind, block_text

Progress = Callable[[Iterable[Any]], Iterable[Any]]

# What fills the context, in drawing order (bottom to top).
KINDS = (
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
            "cost_lost_usd": round(self.cost_lost_usd, 6),
            "marker": self.marker,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """What a handoff at one natural checkpoint (a new human turn) would have saved."""

    index: int
    tokens_now: int
    removable: int
    later_requests: int
    break_even_turns: int | None
    saved_tokens: int  # base-price input tokens over the rest of the session
    saved_usd: float

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tokens_now": self.tokens_now,
            "removable_tokens": self.removable,
            "later_requests": self.later_requests,
            "break_even_turns": self.break_even_turns,
            "saved_tokens": self.saved_tokens,
            "saved_usd": round(self.saved_usd, 4),
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
    checkpoints: tuple[Checkpoint, ...]
    command: str
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "provider": self.provider,
            "tokens_estimated_by": self.tokens_by,
            "command": self.command,
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
    log = read_requests(path, format)
    report = analyze(log.requests, provider, progress=progress, warnings=log.warnings)
    tally = _Composition()
    points = tuple(_points(log, report, tally))
    return ReportData(
        source=str(log.path),
        format=log.format,
        provider=report.provider,
        tokens_by=report.tokens_by,
        points=points,
        summary=report.summary(),
        top_tools=_top_tools(points),
        checkpoints=tuple(_checkpoints(points, report.provider)),
        command=command,
        warnings=tuple(report.warnings),
    )


class _Composition:
    """Tokens by kind of one request body, memoised per distinct message."""

    def __init__(self) -> None:
        self._tally = TokenTally(default_counter())
        self._messages: dict[bytes, tuple[dict[str, int], dict[str, int]]] = {}
        self._fronts: dict[bytes, dict[str, int]] = {}

    def of(self, request: Request) -> tuple[dict[str, int], dict[str, int]]:
        conversation = _conversation(request)
        kinds = dict.fromkeys(KINDS, 0)
        tools: dict[str, int] = {}
        for name, count in self._front(request, conversation).items():
            kinds[name] += count
        names = _call_names(conversation.messages)
        for message in conversation.messages:
            by_kind, by_tool = self._message(message, names)
            for name, count in by_kind.items():
                kinds[name] += count
            for name, count in by_tool.items():
                tools[name] = tools.get(name, 0) + count
        return kinds, tools

    def _front(self, request: Request, conversation: Conversation) -> dict[str, int]:
        key = _digest({k: request.body.get(k) for k in ("system", "tools", "instructions")})
        if key not in self._fronts:
            tally = self._tally.fresh()
            tally.add_front(conversation)
            self._fronts[key] = {"system": tally.by_kind["system"], "tools": tally.by_kind["tools"]}
        return self._fronts[key]

    def _message(
        self, message: Message, names: Mapping[str, str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        key = _digest([message.role, message.raw, [_identity(b) for b in message.blocks]])
        cached = self._messages.get(key)
        if cached is None:
            by_kind: dict[str, int] = {}
            by_tool: dict[str, int] = {}
            for block in message.blocks:
                kind = block_kind(block)
                count = self._tally.count(block_text(block))
                by_kind[kind] = by_kind.get(kind, 0) + count
                tool = _tool_of(block, names)
                if tool is not None:
                    by_tool[tool] = by_tool.get(tool, 0) + count
            cached = (by_kind, by_tool)
            self._messages[key] = cached
        return cached


def _conversation(request: Request) -> Conversation:
    return body_codec(request.body, request.provider).read_body(request.body)


def _raw_messages(request: Request) -> list[Any]:
    """The body's history as the provider's items (``messages``, or a Responses ``input``)."""
    messages = request.body.get("messages", request.body.get("input"))
    return list(messages) if isinstance(messages, list) else []


def _identity(block: Any) -> Any:
    """What tells a block apart: its provider dict, else (a string content) its text."""
    return block.raw if block.raw is not None else block_text(block)


def _digest(value: Any) -> bytes:
    return hashlib.blake2b(jsonio.dumps(value), digest_size=16).digest()


def _call_names(messages: Sequence[Message]) -> dict[str, str]:
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolCall)}


def _tool_of(block: Any, names: Mapping[str, str]) -> str | None:
    if isinstance(block, ToolCall):
        return block.name
    call_id = getattr(block, "call_id", None)
    if isinstance(call_id, str):
        return names.get(call_id, "(unknown tool)")
    return None


def _points(log: RequestLog, report: PrefixReport, tally: _Composition) -> Iterable[Point]:
    previous = 0
    for request, row in zip(log.requests, report.rows, strict=True):
        composition, tools = tally.of(request)
        cache = row.actual or row.predicted
        context = cache.total or sum(composition.values())
        marker = _marker(request, previous, context)
        previous = context
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
            human_turn=_human_turn(request),
        )


def _marker(request: Request, previous: int, context: int) -> str | None:
    """compaction, handoff or reset where the context shrank by `DROP` or more."""
    if not previous or context > previous * (1 - DROP):
        return None
    messages = _raw_messages(request)
    if CHECKPOINT_TOOL.encode() in jsonio.dumps(messages):
        return "handoff"
    if _COMPACTED.encode() in jsonio.dumps(messages[:2]):
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


def _checkpoints(points: Sequence[Point], provider: str) -> Iterable[Checkpoint]:
    rates = RATES["anthropic-5m" if provider == "anthropic" else "openai"]
    table = prices()
    for position, point in enumerate(points):
        if not point.human_turn or position == 0:
            continue
        removable = sum(point.composition.get(kind, 0) for kind in REMOVABLE)
        later = len(points) - position
        if removable <= 0:
            continue
        tokens_now = point.context_tokens
        turns, per_turn, extra = break_even(tokens_now, tokens_now - removable, 1.0, rates)
        saved = max(0.0, (later - 1) * per_turn - extra)
        price, _ = table.price(point.model, provider)
        yield Checkpoint(
            index=point.index,
            tokens_now=tokens_now,
            removable=removable,
            later_requests=later,
            break_even_turns=turns,
            saved_tokens=round(saved),
            saved_usd=saved * price / 1_000_000,
        )


__all__ = ["KINDS", "Checkpoint", "Point", "ReportData", "collect"]
