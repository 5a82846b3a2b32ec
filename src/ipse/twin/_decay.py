"""Relevance decay: keep the snapshot small by letting stale facts leave it.

A per-twin `DecayPolicy` caps the number of live facts. Over the cap, unpinned facts with the
lowest relevance leave the snapshot; relevance halves every ``half_life`` seconds since the fact
was last used. Expired facts leave whatever the cap. Leaving the snapshot is not deletion: the
earlier snapshots in the history still hold the fact, and each `Eviction` (fact, reason) is
recorded as a note on the snapshot that no longer has it. Superseded facts are not counted and
stay, as the record of what replaced what. Pure: same state, policy and time → same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ipse.errors import InputError
from ipse.twin._state import Fact, TwinState, format_time

DEFAULT_HALF_LIFE = 14 * 24 * 3600.0


@dataclass(frozen=True)
class DecayPolicy:
    """At most ``max_facts`` live facts (None: no cap); relevance half-life in seconds."""

    max_facts: int | None = None
    half_life: float = DEFAULT_HALF_LIFE

    def __post_init__(self) -> None:
        if self.max_facts is not None and (
            isinstance(self.max_facts, bool)
            or not isinstance(self.max_facts, int)
            or self.max_facts < 0
        ):
            raise InputError(
                f"decay.max_facts: expected a whole number >= 0, got {self.max_facts!r}"
            )
        if isinstance(self.half_life, bool) or not isinstance(self.half_life, int | float):
            raise InputError(f"decay.half_life: expected seconds, got {self.half_life!r}")
        if not self.half_life > 0:
            raise InputError(f"decay.half_life: must be positive, got {self.half_life!r}")


NO_DECAY = DecayPolicy()


@dataclass(frozen=True)
class Eviction:
    """A fact that left the snapshot, and why (``expired`` or ``decayed``)."""

    fact_id: str
    text: str
    reason: str
    relevance: float

    def to_note(self) -> dict[str, Any]:
        """The JSON note stored with the snapshot."""
        return {
            "event": "fact_left",
            "fact_id": self.fact_id,
            "text": self.text,
            "reason": self.reason,
            "relevance": round(self.relevance, 6),
        }


def relevance(fact: Fact, at: datetime, half_life: float) -> float:
    """``0.5 ** (seconds since last use / half_life)``; 1.0 for a fact used now or later."""
    age = max(0.0, (at - fact.last_used_at).total_seconds())
    return float(0.5 ** (age / half_life))


def decay(
    state: TwinState, policy: DecayPolicy, at: datetime | None = None
) -> tuple[TwinState, tuple[Eviction, ...]]:
    """Drop expired facts, then the least relevant unpinned ones over the cap."""
    when = at or state.as_of
    position = {fact.id: index for index, fact in enumerate(state.facts)}
    leaving: dict[str, Eviction] = {}
    for fact in state.facts:
        if fact.active and fact.expires_at is not None and fact.expires_at <= when:
            leaving[fact.id] = Eviction(fact.id, fact.text, "expired", 0.0)
    live = [f for f in state.facts if f.active and f.id not in leaving]
    if policy.max_facts is not None and len(live) > policy.max_facts:
        candidates = sorted(
            (f for f in live if not f.pinned),
            # Equally relevant facts leave oldest first: by time, then by the order they were
            # established in (facts of one batch share a time; their ids are not ordered).
            key=lambda f: (relevance(f, when, policy.half_life), f.established_at, position[f.id]),
        )
        for fact in candidates[: len(live) - policy.max_facts]:
            score = relevance(fact, when, policy.half_life)
            leaving[fact.id] = Eviction(fact.id, fact.text, "decayed", score)
    if not leaving:
        return state, ()
    kept = tuple(f for f in state.facts if f.id not in leaving)
    evictions = tuple(sorted(leaving.values(), key=lambda e: position[e.fact_id]))
    return state.with_facts(kept), evictions


def describe(evictions: tuple[Eviction, ...], at: datetime) -> list[dict[str, Any]]:
    """Notes for a snapshot, stamped with the time of the transition."""
    stamp = format_time(at)
    return [{**e.to_note(), "at": stamp} for e in evictions]
