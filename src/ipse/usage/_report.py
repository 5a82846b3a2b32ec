"""The ledger grouped for a report: by day, week (from Monday), month, project, session, model
or 5-hour block, between two days, in a time zone.

Days, weeks and months are the local ones of ``zone`` (the system's unless named). A 5-hour
block is the window the provider's usage limits count in: it starts on the hour of its first
call and holds every call until five hours later, unless five hours pass without a call; the
next call starts the next block. Cache losses and savings fall in the group of their time,
project, session and model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from ipse.errors import UsageError
from ipse.usage._ledger import QUARTER, Ledger, Row

GROUPS = ("day", "week", "month", "project", "session", "model", "block")
BLOCK_SECONDS = 5 * 3600


@dataclass(slots=True)
class Bucket:
    """One line of a report: what its calls were billed for, lost and saved."""

    label: str
    calls: int = 0
    input: int = 0
    write_5m: int = 0
    write_1h: int = 0
    read: int = 0
    output: int = 0
    cost: float = 0.0
    lost_usd: float = 0.0
    lost: dict[str, float] = field(default_factory=dict)  # by cause
    saved_usd: float = 0.0
    saved_tokens: int = 0
    handoffs: set[str] = field(default_factory=set)
    models: dict[str, list[float]] = field(default_factory=dict)  # calls, tokens..., cost
    first: float = 0.0
    last: float = 0.0

    def add(self, row: Row) -> None:
        if not self.calls or row.first < self.first:
            self.first = row.first
        self.last = max(self.last, row.last)
        self.calls += row.calls
        self.input += row.input
        self.write_5m += row.write_5m
        self.write_1h += row.write_1h
        self.read += row.read
        self.output += row.output
        self.cost += row.cost
        sums = self.models.get(row.model)
        if sums is None:
            sums = self.models[row.model] = [0, 0, 0, 0, 0, 0, 0.0]
        for i, value in enumerate((row.calls, row.input, row.write_5m, row.write_1h, row.read,
                                   row.output, row.cost)):  # fmt: skip
            sums[i] += value

    @property
    def hit_rate(self) -> float:
        """Cache reads over all input tokens."""
        total = self.input + self.write_5m + self.write_1h + self.read
        return self.read / total if total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "calls": self.calls,
            "input_tokens": self.input,
            "cache_write_5m_tokens": self.write_5m,
            "cache_write_1h_tokens": self.write_1h,
            "cache_read_tokens": self.read,
            "output_tokens": self.output,
            "total_tokens": self.input + self.write_5m + self.write_1h + self.read + self.output,
            "cost_usd": round(self.cost, 6),
            "cache_hit_rate": round(self.hit_rate, 4),
            "cache_lost_usd": round(self.lost_usd, 6),
            "cache_lost_by_cause": {k: round(v, 6) for k, v in sorted(self.lost.items())},
            "saved_usd": round(self.saved_usd, 6),
            "saved_tokens": self.saved_tokens,
            "handoffs": len(self.handoffs),
            "models": {
                name or "(unknown)": {
                    "calls": int(m[0]),
                    "input_tokens": int(m[1]),
                    "cache_write_5m_tokens": int(m[2]),
                    "cache_write_1h_tokens": int(m[3]),
                    "cache_read_tokens": int(m[4]),
                    "output_tokens": int(m[5]),
                    "cost_usd": round(m[6], 6),
                }
                for name, m in sorted(self.models.items())
            },
            "first": _iso(self.first) if self.calls else None,
            "last": _iso(self.last) if self.calls else None,
        }


def _iso(seconds: float) -> str:
    from datetime import UTC

    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def parse_day(text: str) -> date:
    """A day as ``YYYY-MM-DD`` or ``YYYYMMDD`` (`UsageError` otherwise)."""
    value = text.strip()
    if len(value) == 8 and value.isdigit():
        value = f"{value[:4]}-{value[4:6]}-{value[6:]}"
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"not a day: {text!r} (use YYYY-MM-DD or YYYYMMDD)") from None


class _Days:
    """The local day of a quarter hour, each worked out once."""

    def __init__(self, zone: tzinfo | None) -> None:
        self.zone = zone
        self.known: dict[int, date] = {}

    def __call__(self, quarter: int) -> date:
        day = self.known.get(quarter)
        if day is None:
            day = self.known[quarter] = datetime.fromtimestamp(quarter * QUARTER, self.zone).date()
        return day


def _labeller(by: str, days: _Days) -> Callable[[int, str, str, str], str]:
    """The label of a row's group, from its quarter, project, session and model."""
    if by == "day":
        return lambda q, p, s, m: days(q).isoformat()
    if by == "week":
        return lambda q, p, s, m: (days(q) - timedelta(days=days(q).weekday())).isoformat()
    if by == "month":
        return lambda q, p, s, m: days(q).isoformat()[:7]
    if by == "project":
        return lambda q, p, s, m: p
    if by == "session":
        return lambda q, p, s, m: s
    if by == "model":
        return lambda q, p, s, m: m or "(unknown)"
    raise UsageError(f"unknown grouping {by!r} (choose from {', '.join(GROUPS)})")


def group(
    ledger: Ledger,
    by: str,
    *,
    zone: tzinfo | None = None,
    since: date | None = None,
    until: date | None = None,
) -> list[Bucket]:
    """The ledger's rows, losses and savings grouped ``by`` one of `GROUPS`, only those on
    local days from ``since`` to ``until`` (both included); in order of time (labels of
    time) or of cost, the highest first (the others)."""
    days = _Days(zone)

    def kept(quarter: int) -> bool:
        day = days(quarter)
        return (since is None or day >= since) and (until is None or day <= until)

    rows = [r for r in ledger.rows if kept(r.quarter)]
    if by == "block":
        found = _blocks(rows, zone)
        label_at: Callable[[float, str, str, str], str] = _block_finder(found)
    else:
        name = _labeller(by, days)
        found = {}
        for row in rows:
            label = name(row.quarter, row.project, row.session, row.model)
            bucket = found.get(label)
            if bucket is None:
                bucket = found[label] = Bucket(label)
            bucket.add(row)

        def label_at(time: float, project: str, session: str, model: str) -> str:
            return name(int(time // QUARTER), project, session, model)

    _extras(ledger, found, label_at, kept)
    ordered = list(found.values())
    if by in ("day", "week", "month", "block"):
        ordered.sort(key=lambda b: b.label)
    else:
        ordered.sort(key=lambda b: (-b.cost, b.label))
    return ordered


def _extras(
    ledger: Ledger,
    found: dict[str, Bucket],
    label_at: Callable[[float, str, str, str], str],
    kept: Callable[[int], bool],
) -> None:
    """The losses and savings added to the groups they fall in (one only in a group with
    calls: a block or a day the filters left out keeps its own)."""
    for loss in ledger.losses:
        if not kept(int(loss.time // QUARTER)):
            continue
        bucket = found.get(label_at(loss.time, loss.project, loss.session, loss.model))
        if bucket is not None:
            bucket.lost_usd += loss.usd
            bucket.lost[loss.cause] = bucket.lost.get(loss.cause, 0.0) + loss.usd
    for saving in ledger.savings:
        if not kept(int(saving.time // QUARTER)):
            continue
        bucket = found.get(label_at(saving.time, saving.project, saving.session, saving.model))
        if bucket is not None:
            bucket.saved_usd += saving.usd
            bucket.saved_tokens += saving.tokens
            bucket.handoffs.add(saving.handoff)


def _blocks(rows: Iterable[Row], zone: tzinfo | None) -> dict[str, Bucket]:
    """The 5-hour blocks of the rows (see the module's docstring), labelled by their start."""
    found: dict[str, Bucket] = {}
    current: Bucket | None = None
    start = 0.0
    for row in sorted(rows, key=lambda r: r.first):
        if (
            current is None
            or row.first >= start + BLOCK_SECONDS
            or (row.first - current.last >= BLOCK_SECONDS)
        ):
            start = row.first // 3600 * 3600
            label = datetime.fromtimestamp(start, zone).isoformat(timespec="minutes")
            current = found[label] = Bucket(label)
        current.add(row)
    return found


def _block_finder(found: dict[str, Bucket]) -> Callable[[float, str, str, str], str]:
    """The label of the block a time falls in ("" when none holds it)."""
    spans = sorted((b.first // 3600 * 3600, b.last, label) for label, b in found.items())

    def label_at(time: float, project: str, session: str, model: str) -> str:
        for begin, end, label in spans:
            if begin <= time <= max(end, begin + BLOCK_SECONDS):
                return label
        return ""

    return label_at


def total(buckets: Iterable[Bucket]) -> Bucket:
    """The buckets summed into one."""
    out = Bucket("total")
    for bucket in buckets:
        if bucket.calls:
            out.first = bucket.first if not out.calls else min(out.first, bucket.first)
        out.last = max(out.last, bucket.last)
        out.calls += bucket.calls
        out.input += bucket.input
        out.write_5m += bucket.write_5m
        out.write_1h += bucket.write_1h
        out.read += bucket.read
        out.output += bucket.output
        out.cost += bucket.cost
        out.lost_usd += bucket.lost_usd
        for cause, usd in bucket.lost.items():
            out.lost[cause] = out.lost.get(cause, 0.0) + usd
        out.saved_usd += bucket.saved_usd
        out.saved_tokens += bucket.saved_tokens
        out.handoffs |= bucket.handoffs
        for name, sums in bucket.models.items():
            mine = out.models.setdefault(name, [0, 0, 0, 0, 0, 0, 0.0])
            for i, value in enumerate(sums):
                mine[i] += value
    return out


__all__ = ["BLOCK_SECONDS", "GROUPS", "Bucket", "group", "parse_day", "total"]
