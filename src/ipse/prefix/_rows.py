"""What an analysis of a request log gives: a `Row` per request, and the `PrefixReport`
holding them with what holds for the whole log (its summary: tokens, money, losses by cause,
compaction, cold starts, agents, advice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from ipse.prefix._actual import Agreement
from ipse.prefix._causes import CAUSES, Cause
from ipse.prefix._simulate import Tokens


class Row(msgspec.Struct, frozen=True):
    """One request's result.

    A msgspec struct, not a dataclass: one is built for each request; as a frozen dataclass it
    costs a replay 2.4% more instructions (152 requests of a 3 MB Claude Code session,
    `python bench/replay_instructions.py`).
    """

    index: int
    time: datetime | None
    model: str | None
    predicted: Tokens
    actual: Tokens | None
    cause: Cause | None
    ideal_read: int
    lost_tokens: int
    cost_usd: float
    cost_lost_usd: float
    agrees: bool | None = None  # prediction within tolerance of the record (None: no record)
    predicted_cause: Cause | None = None  # a modelled cause the record does not bear out
    agent: str | None = None  # the sub-agent that sent it (None: the main thread)
    compaction: bool = False  # a compaction call: reported apart, not in the headline loss
    off_path: bool = False  # billed, but its response is not on the live path
    cold_start: bool = False  # the first call of its chain: nothing was cached before it
    gap_s: float | None = None  # seconds since its candidate was sent (None: not known)
    ttl: str | None = None  # the TTL its writes carried (recorded, else its thread's, else None)
    handoff: dict[str, Any] | None = None  # ipse's handoff rewrote it (`handoff_shown`)
    conversation: str | None = None  # the conversation it belongs to, where the input says
    front: int = 0  # tokens of its fixed front (tools, system prompt, settings) as charged

    @property
    def basis(self) -> str:
        """``recorded`` when the cost and loss come from recorded usage, else ``modelled``."""
        return "recorded" if self.actual is not None else "modelled"

    @property
    def charged(self) -> Tokens:
        """The split the cost is computed from: the record when there is one."""
        return self.actual if self.actual is not None else self.predicted

    def to_json(self) -> dict[str, Any]:
        cause, actual, time = self.cause, self.actual, self.time
        predicted_cause = self.predicted_cause
        return {
            "index": self.index,
            "time": time.isoformat() if time else None,
            "model": self.model,
            "predicted": self.predicted.to_json(),
            "actual": actual.to_json() if actual else None,
            "basis": "recorded" if actual is not None else "modelled",  # (`basis`)
            "agrees": self.agrees,
            "cause": cause.kind if cause else None,
            "detail": cause.detail if cause else None,
            "location": cause.location if cause else None,
            "candidate": cause.candidate if cause else None,
            "predicted_cause": predicted_cause.kind if predicted_cause else None,
            "agent": self.agent,
            "compaction": self.compaction,
            "off_path": self.off_path,
            "cold_start": self.cold_start,
            "ttl": self.ttl,
            "gap_s": round(self.gap_s, 3) if self.gap_s is not None else None,
            "lost_tokens": self.lost_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "cost_lost_usd": round(self.cost_lost_usd, 6),
            "handoff": self.handoff,
            "conversation": self.conversation,
        }


def handoff_shown(handoff: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a row says of the handoff the proxy's record says was made at its request: where it
    cut, the tool calls it removed and what it saved (the record's ``saved``: the count the
    proxy's log line quotes)."""
    if handoff is None:
        return None
    saved = handoff.get("saved")
    saved = saved if isinstance(saved, Mapping) else {}
    return {
        "anchor": handoff.get("anchor"),
        "removed_calls": handoff.get("removed_calls"),
        "saved_tokens": saved.get("tokens"),
        "saved_bytes": saved.get("bytes"),
    }


@dataclass(slots=True)
class PrefixReport:
    """Rows in log order, and what holds for the whole log."""

    provider: str
    rows: list[Row]
    agreement: Agreement | None
    ttl_modelled: bool
    tokens_by: str
    warnings: list[str] = field(default_factory=list)
    cost_ideal_usd: float = 0.0
    min_tokens: int = 0  # the least recorded loss charged
    merged: int = 0  # records of one call merged into it (no response id to tell them apart)
    # (tokens per estimated token, tokens) of the front the input does not record, as fitted
    front_fit: tuple[float, int] = (1.0, 0)

    def summary(self) -> dict[str, Any]:
        rows = self.rows
        t = _Totals(rows)
        for row in rows:
            t.add(row)
        t.round_money()
        cost = sum(t.costs)
        recorded, by_cause = t.recorded, t.by_cause
        summary: dict[str, Any] = {
            "requests": len(rows),
            "hit_rate": round(t.read / t.total, 4) if t.total else 0.0,
            "predicted_hit_rate": (
                round(t.predicted_read / t.predicted_total, 4) if t.predicted_total else 0.0
            ),
            "basis": {"recorded": recorded, "modelled": len(rows) - recorded},
            "tokens": {
                "cache_read": t.read,
                "cache_write": t.write,
                "uncached": t.uncached,
                "lost": t.lost,
            },
            "cost_usd": round(cost, 6),
            "cost_ideal_usd": round(self.cost_ideal_usd, 6),
            "cost_lost_usd": round(sum(t.costs_lost), 6),
            "cost_vs_ideal": round(cost / self.cost_ideal_usd, 4) if self.cost_ideal_usd else None,
            "by_cause": {k: by_cause[k] for k in CAUSES if k in by_cause},
            "compaction": t.compaction,
            "cold_starts": t.cold,
            "off_path": t.off_path,
            "merged_records": self.merged,
            "min_tokens": self.min_tokens,
            "ttl_analysis": "modelled" if self.ttl_modelled else "skipped: times missing",
            "tokens_estimated_by": self.tokens_by,
            "warnings": list(self.warnings),
        }
        if recorded:
            summary["actual_hit_rate"] = (
                round(t.actual_read / t.actual_total, 4) if t.actual_total else 0
            )
        summary["agreement"] = self.agreement.to_json() if self.agreement else None
        if t.agents:
            summary["by_agent"] = t.agents
        if t.conversations:
            summary["by_conversation"] = t.conversations
        from ipse.prefix._advice import advice  # (the advice is read once, at the end)

        summary["advice"] = advice(self)
        return summary

    def to_json(self, summary: dict[str, Any] | None = None) -> dict[str, Any]:
        """The report as JSON (``summary``: `summary`'s answer, when the caller has it)."""
        return {
            "provider": self.provider,
            "requests": [r.to_json() for r in self.rows],
            "summary": self.summary() if summary is None else summary,
        }


class _Totals:
    """The sums `PrefixReport.summary` reports, in one pass over the rows (there is one per
    request); money is summed by `sum` over lists in row order, as the interpreter sums
    floats."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.total = self.read = self.write = self.uncached = self.lost = 0
        self.predicted_total = self.predicted_read = 0
        self.recorded = self.actual_total = self.actual_read = 0
        self.costs: list[float] = []
        self.costs_lost: list[float] = []
        self.by_cause: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, dict[str, Any]] = {}
        self.compaction: dict[str, Any] = {"requests": 0, "tokens_lost": 0, "cost_lost_usd": 0.0}
        self.cold: dict[str, Any] = {"requests": 0, "tokens_written": 0, "cost_usd": 0.0}
        self.off_path = 0
        if any(row.agent is not None for row in rows):
            self.agents["main"] = _group()
        # the conversations of the main thread (a proxy's record holds many sessions), when
        # there are several: in the order each first appears
        named = dict.fromkeys(r.conversation for r in rows if r.agent is None and r.conversation)
        self.conversations: dict[str, dict[str, Any]] = (
            {name: _group() for name in named if name} if len(named) > 1 else {}
        )

    def add(self, row: Row) -> None:
        """One row into the totals: tokens, cost, its agent's, a cold start's, its cause's."""
        predicted, actual = row.predicted, row.actual
        charged = predicted if actual is None else actual  # (`charged`)
        self.total += charged.cache_read + charged.cache_write + charged.uncached
        self.read += charged.cache_read
        self.write += charged.cache_write
        self.uncached += charged.uncached
        self.lost += row.lost_tokens if not row.compaction else 0
        self.predicted_total += predicted.cache_read + predicted.cache_write + predicted.uncached
        self.predicted_read += predicted.cache_read
        if actual is not None:
            self.recorded += 1
            self.actual_total += actual.cache_read + actual.cache_write + actual.uncached
            self.actual_read += actual.cache_read
        self.costs.append(row.cost_usd)
        if row.agent is not None or self.agents:
            _add_to(self.agents.setdefault(row.agent or "main", _group()), row)
        if self.conversations and row.agent is None and row.conversation in self.conversations:
            _add_to(self.conversations[row.conversation], row)
        if row.cold_start:
            self.cold["requests"] += 1
            self.cold["tokens_written"] += charged.cache_write
            self.cold["cost_usd"] += row.cost_usd
        if row.off_path:
            self.off_path += 1
        if row.cause is not None:
            self._add_loss(row, row.cause)

    def _add_loss(self, row: Row, cause: Cause) -> None:
        if row.compaction:  # apart: the front it is charged against is not in the file
            self.compaction["requests"] += 1
            self.compaction["tokens_lost"] += row.lost_tokens
            self.compaction["cost_lost_usd"] += row.cost_lost_usd
            return
        self.costs_lost.append(row.cost_lost_usd)
        entry = self.by_cause.setdefault(
            cause.kind, {"requests": 0, "tokens_lost": 0, "cost_lost_usd": 0.0}
        )
        entry["requests"] += 1
        entry["tokens_lost"] += row.lost_tokens
        entry["cost_lost_usd"] += row.cost_lost_usd

    def round_money(self) -> None:
        """The money of every group, to the micro-dollar the report shows."""
        groups = [*self.agents.values(), *self.conversations.values()]
        for entry in [*self.by_cause.values(), *groups, self.compaction, self.cold]:
            for key in ("cost_lost_usd", "cost_usd"):
                if key in entry:
                    entry[key] = round(entry[key], 6)


def _group() -> dict[str, Any]:
    """The totals of an agent's or a conversation's requests."""
    return {"requests": 0, "cost_usd": 0.0, "tokens_lost": 0, "cost_lost_usd": 0.0}


def _add_to(group: dict[str, Any], row: Row) -> None:
    """A row into its agent's or its conversation's totals (a compaction's loss apart)."""
    group["requests"] += 1
    group["cost_usd"] += row.cost_usd
    if row.cause is not None and not row.compaction:
        group["tokens_lost"] += row.lost_tokens
        group["cost_lost_usd"] += row.cost_lost_usd
