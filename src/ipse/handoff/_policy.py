"""When to hand off: never mid tool call, not too often, and only when the prompt cache pays back.

A handoff rewrites the prefix, so the next request pays the rewritten prefix once as a cache
write; every later turn then reads the smaller prefix instead of the larger one. Without a
handoff, the current prefix is read from the cache on every turn (its uncached share written
once). With ``T`` tokens now, ``t`` after the handoff, cached share ``s``, write price ``w`` and
read price ``r`` (multiples of the base input price), the cost difference after ``n`` turns is

    D(n) = T·(s·r + (1−s)·w) − t·w + (n − 1)·(T − t)·r

and the handoff pays off from the first ``n`` with ``D(n) ≥ 0``. Prices are multiples of the
base input price, so the break-even does not depend on the model's base price; rates are data
(`RATES`), from the provider's published cache pricing (see REFERENCE.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ipse.handoff._cut import CHECKPOINT_TOOL, results_by_call
from ipse.handoff._recognise import checkpoint_tool_of
from ipse.transcript import Conversation, Text, ToolCall, ToolResult
from ipse.transcript._shared import Origin


@dataclass(frozen=True, slots=True)
class CacheRates:
    """Cache prices as multiples of the base input price."""

    write: float
    read: float


RATES: dict[str, CacheRates] = {
    "anthropic-5m": CacheRates(write=1.25, read=0.1),
    "anthropic-1h": CacheRates(write=2.0, read=0.1),
    "anthropic-5m-fable-5.1": CacheRates(write=1.25, read=0.025),
    "openai": CacheRates(write=1.0, read=0.5),  # no write fee; read discount varies by model
}


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether to hand off now, why, and after how many turns it pays back."""

    handoff: bool
    reason: str
    break_even_turns: int | None  # None: never pays back
    saving_per_turn: float  # base-price tokens saved on each turn after the first
    first_turn_cost: float  # base-price tokens the first turn costs more (negative: less)

    def to_json(self) -> dict[str, Any]:
        return {
            "handoff": self.handoff,
            "reason": self.reason,
            "break_even_turns": self.break_even_turns,
            "saving_per_turn": round(self.saving_per_turn, 1),
            "first_turn_cost": round(self.first_turn_cost, 1),
        }


def break_even(
    tokens_now: int, tokens_after: int, cached_share: float, rates: CacheRates
) -> tuple[int | None, float, float]:
    """(turns to pay back or None, saving per later turn, extra cost of the first turn)."""
    share = min(max(cached_share, 0.0), 1.0)
    keep_first = tokens_now * (share * rates.read + (1.0 - share) * rates.write)
    extra = tokens_after * rates.write - keep_first
    per_turn = (tokens_now - tokens_after) * rates.read
    if extra <= 0:
        return 1, per_turn, extra
    if per_turn <= 0:
        return None, per_turn, extra
    return 1 + math.ceil(extra / per_turn), per_turn, extra


def decide(
    conversation: Conversation,
    *,
    tokens_now: int,
    tokens_after: int,
    cached_share: float = 1.0,
    rates: CacheRates = RATES["anthropic-5m"],
    expected_turns: int = 10,
    min_turns: int = 3,
    checkpoint_tool: str = CHECKPOINT_TOOL,
) -> Decision:
    """Should a handoff happen now? ``expected_turns`` is how many more turns are expected."""
    turns, per_turn, extra = break_even(tokens_now, tokens_after, cached_share, rates)
    if pending_call(conversation):
        return Decision(False, "a tool call is unanswered", turns, per_turn, extra)
    since = turns_since_checkpoint(conversation, checkpoint_tool)
    if since is not None and since < min_turns:
        return Decision(
            False,
            f"only {since} turn(s) since the last handoff (minimum {min_turns})",
            turns,
            per_turn,
            extra,
        )
    if turns is None:
        return Decision(False, "the handoff never pays back", None, per_turn, extra)
    if turns > expected_turns:
        return Decision(
            False,
            f"pays back after {turns} turns, more than the {expected_turns} expected",
            turns,
            per_turn,
            extra,
        )
    return Decision(True, f"pays back after {turns} turn(s)", turns, per_turn, extra)


def pending_call(conversation: Conversation) -> bool:
    """True when some tool call has no result yet."""
    answered = {b.call_id for _, _, b in conversation.blocks() if isinstance(b, ToolResult)}
    return any(call.id not in answered for call in conversation.tool_calls())


def turns_since_checkpoint(conversation: Conversation, tool: str = CHECKPOINT_TOOL) -> int | None:
    """Human turns since the last checkpoint call; None when there was none."""
    turns = 0
    results = results_by_call(conversation.messages)
    for message in reversed(conversation.messages):
        if any(
            isinstance(b, ToolCall) and checkpoint_tool_of(b, (tool,), results.get(b.id))
            for b in message.blocks
        ):
            return turns
        if message.role == "user" and any(
            isinstance(b, Text) and b.origin is Origin.HUMAN for b in message.blocks
        ):
            turns += 1
    return None


def cached_share(conversation: Conversation) -> float | None:
    """The cached share of the last recorded request (Claude Code usage), if known."""
    for message in reversed(conversation.messages):
        usage = message.meta.get("usage") if message.meta else None
        if isinstance(usage, dict):
            read = _count(usage.get("cache_read_input_tokens"))
            total = read + _count(usage.get("cache_creation_input_tokens"))
            total += _count(usage.get("input_tokens"))
            return read / total if total else None
    return None


def _count(value: Any) -> int:
    """A recorded token count; anything that is not one (a string, a negative number) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value < 2**53 else 0


__all__ = [
    "RATES",
    "CacheRates",
    "Decision",
    "break_even",
    "cached_share",
    "decide",
    "pending_call",
    "turns_since_checkpoint",
]
