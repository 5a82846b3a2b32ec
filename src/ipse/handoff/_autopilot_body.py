"""The autopilot on one request body: its plan, and the body as it goes upstream.

`autopilot_request(body, dialect, policy, limits)` reads the body's history, plans it
(`plan_autopilot`: a function of the history alone, so every replica and every later request
of the conversation decides alike) and writes what the plan says into the body with the writes
``ipse replay`` makes too (`ipse.handoff._autopilot_parts`): the newest cut's rewritten prefix,
then the raw items from the cut on, as the client sent them, and each nudge where it was put.

A proxy calls this on every request, so the main path does little: a cut's prefix is made once
and kept (keyed by the cut's anchor and a digest of the raw items it was made from), as is a cut
the handoff refused; a conversation's last plan is kept (`_Memo`) and stands for a body that
only appends to it while none of its new requests can bring a nudge or a cut, so such a body is
neither read nor planned; a body whose history is the last plan's (a retry) is written as that
request was, and brings no new nudge or cut (nor does one whose cut comes from the cache at the
request that made it). A cut's ``tokens_after`` is the request it was made at as it is sent
(`counted`), wherever the handoff settled the cut. A body the rewrite would leave invalid
(`validate`, on the request that brings a new nudge or cut: the later ones send the same parts
again) goes on as the client sent it, with the reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse.errors import IpseError
from ipse.handoff._autopilot import AutopilotPolicy, Limits, RequestState, thresholds
from ipse.handoff._autopilot_parts import (
    AutopilotCut,
    autopilot_cut,
    insert_nudges,
    item_starts,
    place_nudges,
)
from ipse.handoff._autopilot_plan import (
    NUDGE,
    AutopilotPlan,
    bytes_per_token,
    counted,
    plan_autopilot,
)
from ipse.handoff._kept_thinking import binds_thinking, without_thinking
from ipse.handoff._lru import LruCache
from ipse.handoff._recognise import CHECKPOINT_TOOLS
from ipse.handoff._validate import validate
from ipse.transcript import Conversation, Message, Text
from ipse.transcript._shared import codec

if TYPE_CHECKING:
    from ipse.archive._shared import ArchiveSink

_CACHE_SIZE = 64
_REPEAT = "repeats an earlier request"  # (the client sent the same history again: a retry)


@dataclass(frozen=True, slots=True)
class AutopilotRewrite:
    """What the autopilot did to one request.

    ``body``: the body to send (None: as the client sent it); ``action``: what this request
    brought (``nothing``, ``nudge``, ``cut``: the plan's step at its last message);
    ``anchor``: the newest autopilot cut's name (None: not cut); ``nudges``: nudges placed;
    ``tokens``/``tokens_after``: the request's size without the new cut (the plan's count) and
    with it (at a cut: the body sent where it was made, counted alike); ``removed_calls``: the
    tool calls the cut left out; ``cache_cost``: the base-price tokens the cut pays for
    writing the cache again (the plan's); ``reason``: why, or why nothing was changed;
    ``invalid``: a change was planned but left out because the result would not be valid."""

    body: dict[str, Any] | None
    _: KW_ONLY
    action: str = "nothing"
    reason: str = ""
    anchor: str | None = None
    nudges: int = 0
    tokens: int | None = None
    tokens_after: int | None = None
    cache_cost: float = 0.0
    soft: int | None = None
    hard: int | None = None
    removed_calls: int = 0
    archived: int = 0
    session: str | None = None
    cached: bool = False  # the cut's prefix came from the cache
    invalid: bool = False

    @property
    def applied(self) -> bool:
        return self.body is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "action": self.action,
            "reason": self.reason,
            "anchor": self.anchor,
            "nudges": self.nudges,
            "tokens": self.tokens,
            "tokens_after": self.tokens_after,
            "cache_cost": round(self.cache_cost, 1),
            "soft": self.soft,
            "hard": self.hard,
            "removed_calls": self.removed_calls,
            "cached": self.cached,
            "invalid": self.invalid,
        }


# ----------------------------------------------------------------------------- one request


_CUTS = LruCache(_CACHE_SIZE)  # (dialect, anchor, digest) -> AutopilotCut | the refusal's reason


@dataclass(frozen=True, slots=True)
class _Memo:
    """A conversation's last full plan: ``items`` raw items (``digest``) were planned, its last
    request went upstream at ``tokens`` (the plan's count), and no checkpoint call is in them.

    A body that only appends to them and names no checkpoint tool in what it appends has the
    same cut and nudges, unless one of its new requests brings a nudge or a cut. Each new
    request counts at most ``tokens`` plus the appended items' bytes over `bytes_per_token`
    (the plan counts each message's bytes so): where that bound stays below the lowest soft
    threshold (or, with nudges only, in a stretch nudged already), none can, and the body is
    written from the memo without reading or planning it (`_as_planned`). A nudged stretch in
    cut mode is planned in full: it may be cut from the cut size on (`ipse.handoff._autopilot`),
    anywhere between the soft and the hard threshold."""

    items: int
    digest: bytes
    tokens: int
    found: AutopilotRewrite
    cut: AutopilotCut | None
    nudges: tuple[int, ...]  # the raw items the nudges go before


_MEMOS = LruCache(4 * _CACHE_SIZE)  # (dialect, session, policy, limits) -> _Memo


def clear_autopilot_cache() -> None:
    """Forget every cut's prefix (the next request makes, and archives, it again) and every
    conversation's plan."""
    _CUTS.clear()
    _MEMOS.clear()


def autopilot_request(
    body: Mapping[str, Any],
    dialect: str,
    policy: AutopilotPolicy,
    limits: Limits,
    *,
    base: Mapping[str, Any] | None = None,
    archive: ArchiveSink | None = None,
    session: str = "proxy",
    source: str = "proxy",
    tool_names: Sequence[str] = CHECKPOINT_TOOLS,
) -> AutopilotRewrite:
    """What the autopilot makes of ``body`` (see the module docstring). ``base``: the body as
    the agent's own checkpoint rewrote it (its tail is the client's), where the nudges go when
    the autopilot did not cut after that checkpoint."""
    dialect_codec = codec(dialect)
    key = dialect_codec.history_key
    raw = body.get(key)
    unread = _unread(policy, raw)
    if unread is not None:
        return unread
    assert isinstance(raw, list)
    # (a harness's session may hold several threads, its sub-agents': the first item tells them)
    memo_key = (dialect, session, _digest(raw[:1]), policy, limits, tuple(tool_names))
    known = None
    if base is None:
        known = _as_planned(_MEMOS.get(memo_key), body, raw, dialect, policy, limits,
                            tool_names)  # fmt: skip
    if known is not None:
        return known
    conversation = dialect_codec.read_body(body)
    plan = plan_autopilot(conversation, policy, limits, tool_names=tool_names)
    now = plan.now
    found = _found(plan)
    if plan.cut is None and not plan.nudges:
        done = replace(found, reason=now.reason if now is not None else "no request to judge")
        _remember(memo_key, raw, plan, done, None, (), tool_names)
        return done
    starts = item_starts(conversation, len(raw))
    cut: AutopilotCut | None = None
    refused: tuple[Any, ...] = ("nudges", dialect, session, plan.anchor, plan.nudges)
    if plan.cut is not None:
        made = _cut(conversation, plan, dialect, starts, body, session, archive, source)
        if isinstance(made, str):
            return replace(found, reason=f"not cut: {made}", invalid=True)
        cut, cached, cut_key = made
        found = _with_cut(found, cut, cached)
        items = [*cut.prefix, *raw[cut.item :]]
        items = _without_bound_thinking(items, len(cut.prefix), body.get("model"), dialect)
        refused = cut_key if not cached else refused
    else:
        source_items = base.get(key) if base is not None else None
        items = list(source_items if isinstance(source_items, list) else raw)
    nudges = () if isinstance(_CUTS.get(refused), str) and cut is None else plan.nudges
    items = place_nudges(items, len(raw), starts, nudges, dialect)
    out = dict(base if base is not None and cut is None else body)
    out[key] = items
    left = _left_as_sent(found, out, dialect, refused, cut)
    if left is not None:
        return left
    done = replace(found, body=out if nudges or cut else None, nudges=len(nudges))
    _remember(memo_key, raw, plan, done, cut, tuple(starts[m + 1] for m in sorted(nudges)),
              tool_names)  # fmt: skip
    return done


def _unread(policy: AutopilotPolicy, raw: Any) -> AutopilotRewrite | None:
    """The answer for a body the autopilot does not read (None: read it)."""
    if policy.mode == "off":
        return AutopilotRewrite(None, reason="the autopilot is off")
    if not isinstance(raw, list) or not raw:
        return AutopilotRewrite(None, reason="the body has no message history")
    return None


def _with_cut(found: AutopilotRewrite, cut: AutopilotCut, cached: bool) -> AutopilotRewrite:
    """What the request says of the cut it sends: made at it, or made before (``cached``: the
    same history was cut there, so the request only repeats it)."""
    found = replace(found, removed_calls=cut.removed_calls, archived=cut.archived,
                    session=cut.session, cached=cached)  # fmt: skip
    if found.action != "nudge":  # (a nudge's sizes are its own request's, not the cut's)
        found = replace(found, tokens_after=cut.tokens_after)
    if cached and found.action == "cut":  # the same history cut before: a repeat of it
        found = replace(found, action="nothing", reason=f"{_REPEAT}: the cut was made there")
    return found


def _left_as_sent(
    found: AutopilotRewrite,
    out: Mapping[str, Any],
    dialect: str,
    refused: tuple[Any, ...],
    cut: AutopilotCut | None,
) -> AutopilotRewrite | None:
    """The request left as the client sent it, where the body the autopilot would send is one
    the provider refuses (None: it is not). A body made of what was checked before (a cut's
    cached prefix, the raw tail after it, the nudges where they were) is not read again: only
    a request that brings something new is; what it refuses stays refused (the cut, else the
    nudges) for the later requests."""
    fresh = found.action != "nothing" or (cut is not None and not found.cached)
    problem = _problem(out, dialect) if fresh else None
    if problem is None:
        return None
    _CUTS.put(refused, problem)
    return replace(found, reason=f"left as sent: {problem}", invalid=True)


def _remember(
    key: tuple[Any, ...],
    raw: list[Any],
    plan: AutopilotPlan,
    done: AutopilotRewrite,
    cut: AutopilotCut | None,
    nudges: tuple[int, ...],
    tool_names: Sequence[str],
) -> None:
    """Keep the conversation's plan as a `_Memo`, where one may stand for it: its last message
    is a request's (the plan's count is that request's), no checkpoint call is in it."""
    if plan.now is None or plan.trigger == "checkpoint" or _names(raw, tool_names):
        return
    _MEMOS.put(key, _Memo(len(raw), _digest(raw), plan.tokens, done, cut, nudges))


def _as_planned(
    memo: _Memo | None,
    body: Mapping[str, Any],
    raw: list[Any],
    dialect: str,
    policy: AutopilotPolicy,
    limits: Limits,
    tool_names: Sequence[str],
) -> AutopilotRewrite | None:
    """The body written by its conversation's `_Memo`, where the memo holds for it (None:
    plan it). A body whose history is the memo's (the client sent its last request again) is
    written as that request was, and brings nothing: its nudge or cut was made there."""
    if memo is None or len(raw) < memo.items:
        return None
    repeat = len(raw) == memo.items
    if not repeat and not _appends_nothing_new(memo, raw, policy, limits, tool_names):
        return None
    if _digest(raw[: memo.items]) != memo.digest:
        return None
    if repeat:
        written = _written(memo, body, raw, dialect)
        return replace(memo.found, body=written, action="nothing", reason=_REPEAT, archived=0,
                       cached=memo.cut is not None)  # fmt: skip
    cut = memo.cut
    if cut is None and not memo.nudges:
        return replace(memo.found, action="nothing", reason="below the soft threshold")
    out = _written(memo, body, raw, dialect)
    reason = "below the thresholds" if not memo.nudges else "nudged already since the last cut"
    return replace(memo.found, body=out, action="nothing", reason=reason, cached=cut is not None,
                   archived=0)  # fmt: skip


def _appends_nothing_new(
    memo: _Memo,
    raw: list[Any],
    policy: AutopilotPolicy,
    limits: Limits,
    tool_names: Sequence[str],
) -> bool:
    """Whether none of the requests the items after the memo's bring can nudge or cut (see
    `_Memo`)."""
    lowest = thresholds(RequestState(0, None, limits), policy)
    appended = jsonio.dumps(raw[memo.items :])
    bound = memo.tokens + len(appended) / bytes_per_token()
    # below the lowest soft threshold nothing happens; once nudged, nothing more in nudge mode
    # (in cut mode a nudged conversation may be cut from the cut size on, never below soft)
    if not (bound < lowest.soft or (memo.nudges and policy.mode == "nudge")):
        return False
    return not any(name.encode() in appended for name in tool_names)


def _written(memo: _Memo, body: Mapping[str, Any], raw: list[Any], dialect: str) -> Any:
    """``body`` with its history as the memo's plan writes it (None: as sent)."""
    cut = memo.cut
    if cut is None and not memo.nudges:
        return None
    if cut is not None:
        items = [*cut.prefix, *raw[cut.item :]]
        items = _without_bound_thinking(items, len(cut.prefix), body.get("model"), dialect)
    else:
        items = list(raw)
    out = dict(body)
    out[codec(dialect).history_key] = insert_nudges(items, len(raw), memo.nudges, dialect)
    return out


def _names(items: Sequence[Any], tool_names: Sequence[str]) -> bool:
    """Whether ``items`` name a checkpoint tool anywhere (a call, an answer, a code tool's
    source)."""
    blob = jsonio.dumps(list(items))
    return any(name.encode() in blob for name in tool_names)


def _digest(items: Sequence[Any]) -> bytes:
    return hashlib.sha256(jsonio.dumps(list(items))).digest()


def _found(plan: AutopilotPlan) -> AutopilotRewrite:
    """What the plan says of this request, before the body is written."""
    now = plan.now
    step = now  # what this request brought; else the newest cut it carries
    if plan.cut is not None and (now is None or now.action == "nothing"):
        newest = next((e for e in reversed(plan.events) if e.action == "cut"), None)
        step = newest.step if newest is not None else now
    return AutopilotRewrite(
        None,
        action=now.action if now is not None else "nothing",
        reason=now.reason if now is not None else "",
        anchor=plan.anchor,
        tokens=step.tokens if step is not None else None,
        tokens_after=step.tokens_after if step is not None else None,
        cache_cost=step.cache_cost if step is not None else 0.0,
        soft=now.thresholds.soft if now is not None else None,
        hard=now.thresholds.hard if now is not None else None,
    )


def _cut(
    conversation: Conversation,
    plan: AutopilotPlan,
    dialect: str,
    starts: Sequence[int],
    body: Mapping[str, Any],
    session: str,
    archive: ArchiveSink | None,
    source: str,
) -> tuple[AutopilotCut, bool, tuple[Any, ...]] | str:
    """The plan's newest cut, from the cache when the raw history it was made from is the same
    (whether it was, and its key), else made now; a refusal's reason (remembered alike). A cut
    made now holds the size of the request it was made at as that request is sent (`_sent`)."""
    raw = body[codec(dialect).history_key]
    event = next(e for e in reversed(plan.events) if e.action == "cut")
    made_from = starts[event.request + 1]
    digest = _digest(raw[:made_from])
    cache_key = (dialect, plan.anchor, digest)
    known = _CUTS.get(cache_key)
    if isinstance(known, AutopilotCut):
        return known, True, cache_key
    if isinstance(known, str):
        return known
    try:
        cut = autopilot_cut(
            conversation, event, dialect, starts, session=session, archive=archive, source=source
        )
    except IpseError as exc:
        _CUTS.put(cache_key, str(exc))
        return str(exc)
    cut = replace(cut, tokens_after=_sent(cut, body, made_from, dialect))
    _CUTS.put(cache_key, cut)
    return cut, False, cache_key


def _sent(cut: AutopilotCut, body: Mapping[str, Any], made_from: int, dialect: str) -> int:
    """The size of the request ``cut`` was made at, as it goes upstream: its history the cut's
    prefix and the raw items kept after it, counted as a plan counts (`counted`), so the record
    says what the cut kept, wherever the handoff settled it."""
    dialect_codec = codec(dialect)
    raw = body[dialect_codec.history_key]
    items = [*cut.prefix, *raw[cut.item : made_from]]
    items = _without_bound_thinking(items, len(cut.prefix), body.get("model"), dialect)
    return counted(dialect_codec.read_body({**body, dialect_codec.history_key: items}))


def _without_bound_thinking(
    items: list[Any], prefix: int, model: object, dialect: str
) -> list[Any]:
    """On a model that binds thinking to its prefix, the kept turns without their thinking
    (the prefix it was bound to is gone), as the checkpoint's handoff does."""
    if not (codec(dialect).thinking_binds and binds_thinking(model)):
        return items
    head, tail = items[:prefix], items[prefix:]
    if head:
        [last, *kept], _ = without_thinking(tail, head[-1])
        return [*head[:-1], last, *kept]
    kept, _ = without_thinking(tail)
    return kept


def _problem(body: Mapping[str, Any], dialect: str) -> str | None:
    """The first rule of the provider the body breaks (None: valid). A nudge is a user message
    of its own after a user message: the providers take consecutive user messages as one turn,
    so that alone is no problem."""
    try:
        conversation = codec(dialect).read_body(body)
        problems = validate(conversation)
    except IpseError as exc:
        return str(exc)
    messages = conversation.messages
    for problem in problems:
        if problem.code == "roles_not_alternating" and _is_nudge(messages, problem.index):
            continue
        return str(problem)
    return None


def _is_nudge(messages: Sequence[Message], index: int | None) -> bool:
    if index is None or not 0 <= index < len(messages):
        return False
    blocks = messages[index].blocks
    nxt = messages[index + 1].blocks if index + 1 < len(messages) else ()
    return _nudge_only(blocks) or _nudge_only(nxt)


def _nudge_only(blocks: Sequence[Any]) -> bool:
    return len(blocks) == 1 and isinstance(blocks[0], Text) and blocks[0].text == NUDGE


__all__ = [
    "AutopilotRewrite",
    "autopilot_request",
    "clear_autopilot_cache",
]
