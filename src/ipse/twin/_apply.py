"""Applying a batch of transitions as one step: all of them, then decay, or none.

This is the unit a twin's turn produces: the records (from a JSONL file or a model's tool
calls) applied in order to a state, then expired and over-cap facts leaving under the twin's
decay policy. A bad record raises `InputError` and the caller's state is unchanged, so nothing
is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ipse.twin._decay import NO_DECAY, DecayPolicy, Eviction, decay, describe
from ipse.twin._state import TwinState, utcnow
from ipse.twin._transitions import apply_record


@dataclass(frozen=True)
class Applied:
    """The state after a batch, and the facts that left it."""

    state: TwinState
    evictions: tuple[Eviction, ...]
    at: datetime

    @property
    def notes(self) -> list[dict[str, Any]]:
        """Notes to store with the snapshot (why facts left)."""
        return describe(self.evictions, self.at)


def apply_transitions(
    state: TwinState,
    records: Iterable[Any],
    *,
    policy: DecayPolicy = NO_DECAY,
    at: datetime | None = None,
) -> Applied:
    """Apply ``{"op": ...}`` records in order, then decay; `InputError` names the bad record."""
    when = at or utcnow()
    current = state
    for index, record in enumerate(records, start=1):
        current = apply_record(current, record, at=when, where=f"transition {index}")
    current, evictions = decay(current, policy, when)
    return Applied(current, evictions, when)
