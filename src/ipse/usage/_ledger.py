"""The bill's ledger: every billed call summed by quarter hour, model, session and agent.

A quarter hour is the finest grain any report needs: days, weeks and months in any time zone
(every zone's offset is a whole number of quarter hours), and the 5-hour blocks, which start
on the hour (a row keeps its first and last call's time, so a block's gaps are exact). The
ledger is what the index keeps between runs (`ipse.usage._index`): a run over history that has
not changed reads it back and reads no session. Cache losses (the breaks the prefix replay
finds, by cause) and ipse's savings (the tokens a handoff took out of each request) are kept
beside the rows, each with its time, session and project.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ipse.usage._call import Call
from ipse.usage._cost import Costs

QUARTER = 900


@dataclass(slots=True)
class Row:
    """The calls of one quarter hour, model, source, project, session and agent, summed."""

    quarter: int  # Unix seconds // QUARTER
    model: str
    provider: str
    source: str
    project: str
    session: str
    agent: str
    calls: int = 0
    input: int = 0
    write_5m: int = 0
    write_1h: int = 0
    read: int = 0
    output: int = 0
    cost: float = 0.0
    first: float = 0.0
    last: float = 0.0

    def add(self, call: Call, cost: float) -> None:
        if not self.calls or call.time < self.first:
            self.first = call.time
        if call.time > self.last:
            self.last = call.time
        self.calls += 1
        self.input += call.input
        self.write_5m += call.write_5m
        self.write_1h += call.write_1h
        self.read += call.read
        self.output += call.output
        self.cost += cost


@dataclass(frozen=True, slots=True)
class Loss:
    """A cache break the replay found: when, where, why, and what it cost beyond its ideal."""

    time: float
    project: str
    session: str
    model: str
    cause: str
    tokens: int
    usd: float


@dataclass(frozen=True, slots=True)
class Saving:
    """A request a handoff made smaller: the tokens it took out, and what they would have
    cost as cache reads (what the request would have paid for them at best)."""

    time: float
    project: str
    session: str
    model: str
    handoff: str  # the conversation and the checkpoint the cut was made at
    tokens: int
    usd: float


@dataclass(slots=True)
class Ledger:
    """Every billed call summed (`Row`), the cache losses and the savings."""

    rows: list[Row] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)
    savings: list[Saving] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)
    files: int = 0
    duplicates: int = 0  # records of calls counted in another file (or another record)
    replayed: int = 0  # sessions whose cache losses are known
    unreplayed: int = 0  # sessions the replay has not read yet

    def to_state(self) -> dict[str, Any]:
        """The ledger as plain values (how the index stores it)."""
        return {
            "rows": [
                [
                    r.quarter,
                    r.model,
                    r.provider,
                    r.source,
                    r.project,
                    r.session,
                    r.agent,
                    r.calls,
                    r.input,
                    r.write_5m,
                    r.write_1h,
                    r.read,
                    r.output,
                    r.cost,
                    r.first,
                    r.last,
                ]
                for r in self.rows
            ],
            "losses": [list(_fields(x)) for x in self.losses],
            "savings": [list(_fields(x)) for x in self.savings],
            "unpriced": self.unpriced,
            "counts": [self.files, self.duplicates, self.replayed, self.unreplayed],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Ledger:
        files, duplicates, replayed, unreplayed = state["counts"]
        return cls(
            [Row(*values) for values in state["rows"]],
            [Loss(*values) for values in state["losses"]],
            [Saving(*values) for values in state["savings"]],
            list(state["unpriced"]),
            files,
            duplicates,
            replayed,
            unreplayed,
        )


def _fields(value: Loss | Saving) -> tuple[Any, ...]:
    if isinstance(value, Loss):
        return (
            value.time,
            value.project,
            value.session,
            value.model,
            value.cause,
            value.tokens,
            value.usd,
        )
    return (
        value.time,
        value.project,
        value.session,
        value.model,
        value.handoff,
        value.tokens,
        value.usd,
    )


def one_each(calls: Iterable[Call]) -> tuple[list[Call], int]:
    """Each billed call once: records with the same identity (`Call.key`) are one call, the
    one `ipse.usage._call.counted` keeps; a call the proxy recorded without an identity a
    session shares (an OpenAI response the rollout does not name) is the session's call when
    a session holds a call of the same provider with the same tokens within a minute. Also how
    many records were left out."""
    from ipse.usage._call import counted

    kept: dict[str, Call] = {}
    plain: list[Call] = []
    proxied: list[Call] = []
    read = 0
    for call in calls:
        read += 1
        if not call.key:
            plain.append(call)
            continue
        before = kept.get(call.key)
        kept[call.key] = call if before is None else counted(before, call)
    out: list[Call] = []
    for call in kept.values():
        (proxied if call.source == "proxy" else out).append(call)
    out.extend(plain)
    if proxied:
        out.extend(_not_in_sessions(proxied, out))
    return out, read - len(out)


def _not_in_sessions(proxied: list[Call], calls: list[Call]) -> list[Call]:
    """The proxy's calls no session holds, by tokens and time (see `one_each`)."""
    seen: dict[tuple[Any, ...], list[float]] = {}
    for call in calls:
        seen.setdefault((call.provider, call.input, call.read, call.output), []).append(call.time)
    return [
        call
        for call in proxied
        if not any(
            abs(t - call.time) <= 60
            for t in seen.get((call.provider, call.input, call.read, call.output), ())
        )
    ]


def ledger_of(calls: Iterable[Call], costs: Costs) -> Ledger:
    """The calls summed into rows (each call once: `one_each`)."""
    unique, duplicates = one_each(calls)
    rows: dict[tuple[Any, ...], Row] = {}
    for call in unique:
        quarter = int(call.time // QUARTER)
        key = (
            quarter,
            call.model,
            call.provider,
            call.source,
            call.project,
            call.session,
            call.agent,
        )
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(*key)
        row.add(call, costs.cost(call))
    ledger = Ledger(sorted(rows.values(), key=lambda r: (r.first, r.session, r.model)))
    ledger.duplicates = duplicates
    ledger.unpriced = costs.unpriced()
    return ledger


__all__ = ["QUARTER", "Ledger", "Loss", "Row", "Saving", "ledger_of", "one_each"]
