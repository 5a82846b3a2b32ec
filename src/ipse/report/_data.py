"""The numbers behind the report: one point per request, and the totals.

Every number comes from the library: the requests from `ipse.prefix.read_requests` (a session, a
request log or a proxy record), the cache per request from `ipse.prefix.analyze` (recorded usage
where the input has it, the provider's cache model otherwise, and which one each row is), what
fills the context from `ipse.transcript`'s token tally by kind (`ipse.report._composition`), and
a handoff's pay-back from `ipse.handoff.break_even`. Nothing here draws; `_svg` and `_page` do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._handoff_events import saved_tokens
from ipse._tokens import default_counter, tokenizer_label
from ipse.handoff._shared import RATES, CacheRates, break_even, is_checkpoint
from ipse.prefix import PrefixReport, Request, analyze, prices, read_requests, rules
from ipse.prefix._shared import UNRECORDED_FRONT, RequestLog, SharedHistory
from ipse.report._composition import (
    CONTEXT_KINDS,
    UNKNOWN_TOOL,
    Composition,
    call_and_result,
    call_names,
    conversation_of,
    raw_messages,
)
from ipse.transcript import detect
from ipse.transcript._shared import (
    FORMAT_TABLE,
    WRITABLE_FORMATS,
    Shape,
    TokenTally,
    codec,
    counted_text,
)

Progress = Callable[[Iterable[Any]], Iterable[Any]]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffMade:
    """A handoff an ipse proxy made, as its record says (`ipse._handoff_events`: each cut once,
    with the saving the proxy measured at it)."""

    index: int
    anchor: str | None
    removed_calls: int | None
    saved_tokens: int | None
    saved_bytes: int | None

    @classmethod
    def of(cls, index: int, handoff: Mapping[str, Any]) -> HandoffMade:
        saved = handoff.get("saved")
        saved = saved if isinstance(saved, Mapping) else {}
        return cls(
            index=index,
            anchor=handoff.get("anchor"),
            removed_calls=handoff.get("removed_calls"),
            saved_tokens=saved_tokens(handoff),
            saved_bytes=saved.get("bytes"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "anchor": self.anchor,
            "removed_calls": self.removed_calls,
            "saved_tokens": self.saved_tokens,
            "saved_bytes": self.saved_bytes,
        }


@dataclass(frozen=True)
class AutopilotMade:
    """A nudge or a cut of its own the proxy's autopilot made, as its record says (apart from
    the agent's checkpoints): the request's tokens before and after (a cut), the cache cost it
    paid (base-price tokens; negative: the cut request itself cost less)."""

    index: int
    action: str
    anchor: str | None
    tokens: int | None
    tokens_after: int | None
    cache_cost: float | None

    @classmethod
    def of(cls, index: int, found: Mapping[str, Any]) -> AutopilotMade:
        def number(name: str) -> Any:
            value = found.get(name)
            return value if isinstance(value, int | float) and not isinstance(value, bool) else None

        action = str(found.get("action"))
        return cls(index, action, found.get("anchor") if action == "cut" else None,
                   number("tokens"), number("tokens_after") if action == "cut" else None,
                   number("cache_cost") if action == "cut" else None)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "action": self.action,
            "anchor": self.anchor,
            "tokens": self.tokens,
            "tokens_after": self.tokens_after,
            "cache_cost": self.cache_cost,
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
    handoffs: tuple[HandoffMade, ...] = ()  # the handoffs an ipse proxy made, as it recorded
    autopilot: tuple[AutopilotMade, ...] = ()  # the proxy's autopilot nudges and cuts
    # the autopilot replayed on the input (`ipse.replay`): what it would have saved
    replay: Mapping[str, Any] | None = None

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
            "handoffs": [h.to_json() for h in self.handoffs],
            "autopilot": [a.to_json() for a in self.autopilot],
            "replay": dict(self.replay) if self.replay is not None else None,
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
    tally = Composition(log.requests)
    points = tuple(_points(log, report, tally))
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
        handoffs=tuple(
            HandoffMade.of(r.index, r.handoff) for r in log.requests if r.handoff is not None
        ),
        autopilot=tuple(
            AutopilotMade.of(r.index, r.autopilot) for r in log.requests if r.autopilot is not None
        ),
        replay=_replayed(log, path),
    )


def _replayed(log: RequestLog, path: str) -> dict[str, Any]:
    """What the autopilot would have saved on ``log`` (`ipse.replay`, its policy's defaults,
    the agent CLI's compaction rule for the input's format; continuity not probed): the whole
    bill as recorded and with it (at the recorded prices), the conversation's ratio, the cuts
    and nudges."""
    from ipse.agents._shared import compaction_rule
    from ipse.replay import ReplayOptions, document, replay_log

    options = ReplayOptions(compaction=compaction_rule(log.format), continuity=False)
    found = document(replay_log(log, options, session=Path(path)))
    recorded, policy = found["recorded"], found["with_policy_at_recorded"]
    return {
        "policy": found["policy"]["mode"],
        "bill_recorded_usd": recorded["bill_usd"],
        "bill_with_policy_usd": policy["bill_usd"],
        "saved_usd": round(recorded["bill_usd"] - policy["bill_usd"], 6),
        "conversation_ratio": found["ratio"]["conversation"],
        "cuts": len(found["cuts"]),
        "nudges": found["nudges"],
    }


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
        messages = conversation_of(request).messages
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
    names = call_names(conversation.messages)
    tools: dict[str, int] = {}
    for message in conversation.messages:
        for block in message.blocks:
            call_name, result_of = call_and_result(block)
            tool = call_name if result_of is None else names.get(result_of, UNKNOWN_TOOL)
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


def _points(
    log: RequestLog,
    report: PrefixReport,
    tally: Composition,
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
        # a handoff an ipse proxy made (its record says so, once per cut), whatever its size
        marker = "handoff" if request.handoff is not None else None
        if request.autopilot is not None and request.autopilot.get("action") == "cut":
            marker = "autopilot"  # the proxy's own cut, apart from the agent's checkpoints
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


def _marker(request: Request, previous: int, context: int, tally: Composition) -> str | None:
    """compaction, handoff or reset where the context shrank by `DROP` or more."""
    if not previous or context > previous * (1 - DROP):
        return None
    if tally.mentions_checkpoint(request):
        return "handoff"
    body = request.body
    first = body.head(2) if isinstance(body, SharedHistory) else raw_messages(request)[:2]
    if _COMPACTED.encode() in jsonio.dumps(first):
        return "compaction"
    return "reset"


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


__all__ = ["CONTEXT_KINDS", "HandoffMade", "HandoffSaving", "Point", "ReportData", "collect"]
