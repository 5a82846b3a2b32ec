"""The current (version 3) twin state: immutable values, plus timestamp helpers.

A state is who the twin is talking to, the facts established with them (each with its own
timestamps; a replaced fact is marked ``superseded_by``, never deleted), the commitments that
keep tone and posture, and the open loops with at most one active. Values are frozen and
transitions return new ones. Ids are derived from text (``f-`` / ``l-`` plus a short hash), so
establishing the same fact twice is the same fact, and ids are stable across processes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache

CURRENT_SCHEMA = 3


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC, to the microsecond."""
    return datetime.now(UTC)


@lru_cache(maxsize=4096)
def format_time(value: datetime) -> str:
    """ISO-8601 in UTC with a ``Z`` suffix: the one way ipse writes timestamps."""
    text = value.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def text_id(prefix: str, text: str) -> str:
    """A stable short id for a text: ``prefix`` + 10 hex digits of its SHA-256."""
    return prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class Fact:
    """One established fact about the counterparty."""

    id: str
    text: str
    established_at: datetime
    last_used_at: datetime
    pinned: bool = False
    expires_at: datetime | None = None
    superseded_by: str | None = None

    @property
    def active(self) -> bool:
        """Not replaced by a newer fact (expiry is judged against a time, see `is_live`)."""
        return self.superseded_by is None

    def is_live(self, at: datetime) -> bool:
        """Active and not expired at ``at``."""
        return self.active and (self.expires_at is None or self.expires_at > at)


@dataclass(frozen=True)
class Loop:
    """One open loop: something the twin was pulling and has not closed."""

    id: str
    text: str
    opened_at: datetime


@dataclass(frozen=True)
class Counterparty:
    """Who the twin is talking to, and the facts established with them."""

    account: str
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class TwinState:
    """A twin's identity state, schema version 3."""

    twin_id: str
    counterparty: Counterparty
    commitments: tuple[str, ...] = ()
    open_loops: tuple[Loop, ...] = ()
    active_loop: str | None = None
    as_of: datetime = field(default_factory=utcnow)

    @classmethod
    def new(cls, twin_id: str, account: str = "", *, at: datetime | None = None) -> TwinState:
        """A cold-start state: nobody established yet, nothing promised, nothing open."""
        return cls(twin_id=twin_id, counterparty=Counterparty(account), as_of=at or utcnow())

    @property
    def facts(self) -> tuple[Fact, ...]:
        """Every fact, superseded ones included, in the order they were established."""
        return self.counterparty.facts

    def live_facts(self, at: datetime | None = None) -> tuple[Fact, ...]:
        """Facts neither superseded nor expired at ``at`` (default: the state's ``as_of``)."""
        when = at or self.as_of
        return tuple(f for f in self.facts if f.is_live(when))

    def with_facts(self, facts: tuple[Fact, ...]) -> TwinState:
        """The same state with another fact list."""
        return replace(self, counterparty=replace(self.counterparty, facts=facts))

    def loop(self, loop_id: str) -> Loop | None:
        """The open loop with this id, if any."""
        return next((lp for lp in self.open_loops if lp.id == loop_id), None)


__all__ = [
    "CURRENT_SCHEMA",
    "Counterparty",
    "Fact",
    "Loop",
    "TwinState",
    "format_time",
    "text_id",
    "utcnow",
]
