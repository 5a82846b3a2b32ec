"""The analysis of a request log: replay, causes, agreement, money; as rows and a summary.

`analyze` replays the requests through the provider's simulator in time order, and for each one
finds the best earlier candidate by prefix hash: a dict from every prefix hash seen to the last
request holding it, searched by bisection (prefix hashes are prefix-closed), so side requests of
other conversations interleaved in the log are matched to their own predecessors, as a
content-addressed cache would match them. A request that reads less than its ideal gets a
`Cause`, and the money that cost at the model's prices. The ideal: everything the candidate
sent, as if history had only been appended to, up to the request's new tail (the last
assistant turn and what follows it).

Where a request has recorded usage, the record is the truth: its cost, its loss and the totals
come from the recorded split (``basis: recorded``), and the row says whether the prediction
agrees. A cause the model predicts is charged only when the record shows the loss too; when
the record shows a full read, the cause is kept as ``predicted_cause`` and costs nothing. When
the record shows a loss the model did not predict, the cause is ``not_served``: the content was
there to reuse and the provider did not serve it (evicted early, routed to another cache, or a
change the model does not see).

The record also gives, per request: the TTL its writes carried and their price (1-hour writes
at 2x base input, 5-minute ones at 1.25x: ``cache_creation``), the TTL the replay then models
for its thread; what a whole earlier prefix left in the cache (its read plus its write on
Anthropic; its whole prompt where every prefix is cached and no write is reported); and, when
the response carries one, the API's own diagnosis of a miss, which names the cause outright. A
loss is charged from ``min_tokens`` (1,000 by default). A harness update between two calls is
``cli_version_changed`` where the replay sees nothing else; the loss at a request ipse's own
handoff cut is ``handoff``. Compaction calls, cold starts (a chain's first call) and each
agent's calls are totalled apart; compaction is not in the headline loss.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from typing import Any, NamedTuple

import msgspec

from ipse import progress as ipse_progress
from ipse._plain import UNSET, plain_dataclass
from ipse.jsonio import is_object
from ipse.prefix._actual import (
    Agreement,
    actual_tokens,
    agreement,
    agrees,
    tolerance,
    write_split,
    write_ttl,
)
from ipse.prefix._causes import API_CAUSES, CAUSES, Cause, Side, classify, divergence
from ipse.prefix._columns import backing
from ipse.prefix._hashing import Flat, Flattener
from ipse.prefix._requests import UNRECORDED_FRONT, Request
from ipse.prefix._rules import PROVIDERS, Rules, prices, rules
from ipse.prefix._simulate import Prediction, Simulator, Step, Tokens, simulator
from ipse.tokens import TokenCounter, default_counter

Progress = Callable[[Iterable[Any]], Iterable[Any]]

MIN_TOKENS = 1000  # the least recorded loss reported (``ipse prefix --min-tokens``)


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


@plain_dataclass(slots=True)
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

    def __init__(
        self,
        provider: str,
        rows: list[Row],
        agreement: Agreement | None,
        ttl_modelled: bool,
        tokens_by: str,
        warnings: list[str] = UNSET,
        cost_ideal_usd: float = 0.0,
        min_tokens: int = 0,
        merged: int = 0,
    ) -> None:
        self.provider = provider
        self.rows = rows
        self.agreement = agreement
        self.ttl_modelled = ttl_modelled
        self.tokens_by = tokens_by
        self.warnings = [] if warnings is UNSET else warnings
        self.cost_ideal_usd = cost_ideal_usd
        self.min_tokens = min_tokens
        self.merged = merged

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
        from ipse.prefix._advice import advice  # (the advice is read once, at the end)

        summary["advice"] = advice(self)
        return summary

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "requests": [r.to_json() for r in self.rows],
            "summary": self.summary(),
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
            self.agents["main"] = {
                "requests": 0,
                "cost_usd": 0.0,
                "tokens_lost": 0,
                "cost_lost_usd": 0.0,
            }

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
            self._add_agent(row)
        if row.cold_start:
            self.cold["requests"] += 1
            self.cold["tokens_written"] += charged.cache_write
            self.cold["cost_usd"] += row.cost_usd
        if row.off_path:
            self.off_path += 1
        if row.cause is not None:
            self._add_loss(row, row.cause)

    def _add_agent(self, row: Row) -> None:
        slot = self.agents.setdefault(
            row.agent or "main",
            {"requests": 0, "cost_usd": 0.0, "tokens_lost": 0, "cost_lost_usd": 0.0},
        )
        slot["requests"] += 1
        slot["cost_usd"] += row.cost_usd
        if row.cause is not None and not row.compaction:
            slot["tokens_lost"] += row.lost_tokens
            slot["cost_lost_usd"] += row.cost_lost_usd

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
        for entry in [*self.by_cause.values(), *self.agents.values(), self.compaction, self.cold]:
            for key in ("cost_lost_usd", "cost_usd"):
                if key in entry:
                    entry[key] = round(entry[key], 6)


def _provider(requests: Sequence[Request], provider: str | None) -> str:
    if provider is not None:
        rules(provider)  # validates the name
        return provider
    seen = Counter(r.provider for r in requests)
    counts = {p: seen[p] for p in PROVIDERS}
    return max(counts, key=lambda p: counts[p])


def _counter(
    recorded_usage: Mapping[int, Tokens | None], tokenizer: str, counter: TokenCounter | None
) -> tuple[TokenCounter | None, str]:
    if counter is not None:
        return counter, f"{counter.name} per distinct block"
    recorded = all(usage is not None for usage in recorded_usage.values())
    if tokenizer == "bytes" or (tokenizer == "auto" and recorded):
        label = "serialized bytes / 4 per block"
        return None, label + (", scaled to recorded usage" if recorded else "")
    chosen = default_counter()
    return chosen, f"{chosen.name} per distinct block" + (
        ", scaled to recorded usage where present" if recorded else ""
    )


def analyze(
    requests: Sequence[Request],
    provider: str | None = None,
    *,
    tokenizer: str = "auto",
    counter: TokenCounter | None = None,
    progress: Progress | None = None,
    warnings: Sequence[str] = (),
    min_tokens: int = MIN_TOKENS,
    merged: int = 0,
) -> PrefixReport:
    """Replay ``requests`` through the provider's cache and explain every lost reuse.

    ``tokenizer``: ``auto`` (byte estimates scaled to recorded usage when every request has
    usage, o200k counts otherwise), ``o200k`` or ``bytes``. ``min_tokens``: the least loss
    the record must show to be charged. ``merged``: records the reader merged into the call
    before them (said in the report).
    """
    report = _analyze(requests, provider, tokenizer, counter, progress, warnings, min_tokens)
    report.merged = merged
    return report


def _analyze(
    requests: Sequence[Request],
    provider: str | None,
    tokenizer: str,
    counter: TokenCounter | None,
    progress: Progress | None,
    warnings: Sequence[str],
    min_tokens: int = MIN_TOKENS,
) -> PrefixReport:
    name = _provider(requests, provider)
    sim = simulator(name)
    table = rules(name)
    notes = list(warnings)
    ttl, order = _replay_order(requests, name, notes)
    # what each request's record says (by request index), read once
    recorded = {r.index: actual_tokens(r.usage) for r in order}
    chosen, label = _counter(recorded, tokenizer, counter)
    flattener = Flattener(table, chosen)
    flats: dict[int, Flat] = {}
    fit = _fit_front(order, flattener, flats, recorded)
    replay = _Replay(name, sim, recorded, fit, ttl=ttl, min_tokens=min_tokens)
    rows: dict[int, Row] = {}
    iterable: Iterable[Any] = progress(order) if progress is not None else order
    for request in iterable:
        flat = flats.pop(request.index, None) or flattener.flatten(request.body)
        rows[request.index] = replay.row(request, flat)
    ordered = [rows[r.index] for r in requests]
    pairs = [(r.predicted, r.actual) for r in ordered]
    agree = agreement(pairs) if any(a is not None for _, a in pairs) else None
    return PrefixReport(name, ordered, agree, ttl, label, notes, replay.cost_ideal, min_tokens)


def _replay_order(
    requests: Sequence[Request], provider: str, notes: list[str]
) -> tuple[bool, list[Request]]:
    """Whether every request has a time (the TTL analysis needs it), and the order to replay
    them in: the log's, or time order when the log is out of it. What the reader must know
    about either, and the models' warnings, go to ``notes``."""
    for seen_model in sorted({r.model or "" for r in requests}):
        notes.extend(_model_warnings(seen_model or None, provider))
    ttl = all(r.time is not None for r in requests)
    if not ttl:
        missing = sum(1 for r in requests if r.time is None)
        notes.append(f"{missing} of {len(requests)} requests have no time: TTL analysis skipped")
    order = list(requests)
    if ttl and any(
        a.time is not None and b.time is not None and b.time < a.time
        for a, b in itertools.pairwise(order)
    ):
        notes.append("the log is out of time order: requests replayed in time order")
        order.sort(key=lambda r: r.time or datetime.min)
    return ttl, order


class _PrefixIndex:
    """The requests replayed so far, found by prefix hash, by first message and by thread: what
    a new request could have appended to.

    A prefix hash maps to a cell holding the slot in `seen` of the last request that had it; a
    request that extends the one before it takes over that one's cell, so only its new
    positions are indexed (the cost follows the new work, not the history)."""

    def __init__(self) -> None:
        self.index: dict[int, list[int]] = {}
        self.cells: list[list[int]] = []
        self.by_first: dict[int, int] = {}  # first message's hash -> slot in `seen`
        self.by_conversation: dict[str, int] = {}  # known thread -> its last slot in `seen`
        self.seen: list[tuple[Request, Flat]] = []

    def candidate(self, request: Request, flat: Flat, unrecorded: bool) -> tuple[int, int | None]:
        """Positions shared with the request this one could have appended to, and its slot."""
        seen = self.seen
        shared, slot = _best(flat, self.index, self.by_first, len(seen[-1][1].chain) if seen else 0)
        if (
            slot is not None
            and unrecorded  # (a session's request: its system prompt and tools not recorded)
            and seen[slot][0].conversation != request.conversation
        ):
            shared, slot = 0, None  # another agent's thread: the shared front is a placeholder
        if slot is None and request.conversation is not None:
            slot = self.by_conversation.get(request.conversation)
        return shared, slot

    def add(self, request: Request, flat: Flat) -> None:
        """Index the request just replayed."""
        seen, cells, index = self.seen, self.cells, self.index
        slot_now = len(seen)
        start = 0
        if seen and flat.extends(seen[-1][1]):
            cell = cells[-1]
            cell[0] = slot_now
            start = len(seen[-1][1].chain)
        elif seen and (start := divergence(flat, seen[-1][1])):
            # the prefix shared with the request before now names this one, as if indexed
            # anew: that one's positions past it keep naming it, in a cell of their own, and
            # its cell (which names the rest of its positions) is this one's
            previous = cells[-1]
            kept = [previous[0]]
            for h in seen[-1][1].chain[start:]:
                index[h] = kept
            cell = previous
            cell[0] = slot_now
        else:
            cell = [slot_now]
        cells.append(cell)
        seen.append((request, flat))
        for h in backing(flat.chain)[start : len(flat.chain)]:
            index[h] = cell
        first = flat.first_message
        if first is not None:
            self.by_first[first] = slot_now
        if request.conversation is not None:
            self.by_conversation[request.conversation] = slot_now


class _Loss(NamedTuple):
    """A request's loss as the record tells it (`_Replay.against_record`)."""

    agreeing: bool
    ideal_read: int
    lost: int
    cause: Cause | None
    predicted_cause: Cause | None  # the replay's cause, where the record shows no loss


class _Replay:
    """Replays the requests in order through the simulator, one `Row` each, totalling the
    ideal cost."""

    def __init__(
        self,
        provider: str,
        sim: Simulator,
        recorded: dict[int, Tokens | None],
        fit: tuple[float, int],
        *,
        ttl: bool,
        min_tokens: int,
    ) -> None:
        self.provider = provider
        self.sim = sim
        self.recorded = recorded
        self.fit = fit
        self.ttl = ttl
        self.min_tokens = min_tokens
        self.price_table = prices()
        self.index = _PrefixIndex()
        self.cost_ideal = 0.0
        self.per_model: dict[str | None, tuple[float, float]] = {}  # model -> price, read mult.
        self.chain_ttl: dict[str | None, str] = {}  # thread -> the TTL its last write carried

    def row(self, request: Request, flat: Flat) -> Row:
        """Replay one request: what the simulator predicts, what the record says, the cause
        of a loss, the cost and the ideal; then index it for the requests after it."""
        actual = self.recorded[request.index]
        unrecorded = request.body.get("system") is UNRECORDED_FRONT
        scale, front = _scale(flat, actual, self.fit, unrecorded)
        shared, slot = self.index.candidate(request, flat, unrecorded)
        sent = request.time if self.ttl else None  # (with ``ttl``, every request has a time)
        recorded_ttl = self._write_ttl(request)
        step = Step(
            request.index,
            flat,
            sent.timestamp() if sent is not None else None,
            (request.response_start or sent).timestamp() if sent is not None else None,
            scale,
            shared,
            front,
            recorded_ttl,
        )
        prediction = self.sim.step(step)
        ideal_read, whole = self._ideal_read(flat, slot, step)
        lost = max(0, ideal_read - prediction.tokens.cache_read)
        cause = None
        if lost > 0 and slot is not None:
            cause = self._replayed_cause(request, flat, shared, slot, prediction)
        charged = prediction
        agreeing: bool | None = None
        predicted_cause: Cause | None = None
        if actual is not None:  # the record is the truth: cost and loss from it
            charged = Prediction(
                actual, prediction.read_positions, recorded_ttl or prediction.write_ttl
            )
            agreeing, ideal_read, lost, cause, predicted_cause = self.against_record(
                request, actual, prediction, ideal_read, whole, slot, cause
            )
        cause = _relabelled(cause, request)
        written_ttl = recorded_ttl or prediction.write_ttl
        cost, ideal = self._costs(request, flat.model, charged, ideal_read, step, written_ttl)
        # A recorded request with no loss beyond the tolerance is at its ideal; so is a
        # compaction call, as far as the headline goes (its loss is totalled apart).
        at_ideal = (actual is not None and cause is None) or request.compaction
        self.cost_ideal += cost if at_ideal else min(ideal, cost)
        row = Row(
            request.index,
            request.time,
            flat.model,
            prediction.tokens,
            actual,
            cause,
            ideal_read,
            lost,
            cost,
            max(0.0, cost - ideal) if cause is not None else 0.0,
            agreeing,
            predicted_cause,
            request.agent,
            request.compaction,
            request.off_path,
            slot is None and charged.tokens.cache_write > 0 and not request.compaction,
            self._since_candidate(request, slot),
            written_ttl,
            handoff_shown(request.handoff),
        )
        self.index.add(request, flat)
        return row

    def _since_candidate(self, request: Request, slot: int | None) -> float | None:
        """Seconds from the candidate in ``slot`` to this request, where both have a time."""
        if slot is None:
            return None
        before = self.index.seen[slot][0].time
        if request.time and before:
            return (request.time - before).total_seconds()
        return None

    def _write_ttl(self, request: Request) -> str | None:
        """The TTL this request wrote with, as recorded; a request whose record does not say
        (it wrote nothing) goes on with its thread's."""
        recorded_ttl = write_ttl(request.usage)
        if recorded_ttl is None:
            return self.chain_ttl.get(request.conversation)
        self.chain_ttl[request.conversation] = recorded_ttl
        return recorded_ttl

    def _ideal_read(self, flat: Flat, slot: int | None, step: Step) -> tuple[int, bool]:
        """What appending to the candidate would have kept, and whether the candidate's whole
        prefix was there to reuse."""
        if slot is None:
            return 0, False
        held = len(self.index.seen[slot][1].chain)
        reusable = min(flat.tail, held)
        return self.sim.ideal(step.tokens(reusable), step.total, flat.model), reusable == held

    def _replayed_cause(
        self, request: Request, flat: Flat, shared: int, slot: int, prediction: Prediction
    ) -> Cause | None:
        """Why the replay lost what it did against the candidate in ``slot``."""
        old_request, old_flat = self.index.seen[slot]
        position = shared if shared else divergence(flat, old_flat)
        return classify(
            Side(request.index, request.body, flat, self.provider),
            Side(old_request.index, old_request.body, old_flat, self.provider),
            position,
            prediction.miss,
        )

    def against_record(
        self,
        request: Request,
        actual: Tokens,
        prediction: Prediction,
        ideal_read: int,
        whole: bool,
        slot: int | None,
        cause: Cause | None,
    ) -> _Loss:
        """The loss in the record's terms: the ideal no more than this request sent nor than
        the candidate's record left cached, the API's own count and cause where it gives them;
        a loss under ``min_tokens`` is none (the replay's cause is kept as predicted)."""
        seen = self.index.seen
        within = tolerance(actual)  # (once: the loss below is held to it too)
        agreeing = agrees(prediction.tokens, actual, within)
        recorded_lost = _recorded_ideal(
            ideal_read,
            _left_cached(self.recorded[seen[slot][0].index], self.sim, seen[slot][1].model)
            if slot is not None
            else None,
            whole,
        )
        # the ideal in the record's terms: no more than this request sent
        ideal_read = min(recorded_lost, actual.total)
        recorded_lost = ideal_read - actual.cache_read
        candidate = seen[slot][0] if slot is not None else None
        diagnosis = _diagnosis(request, candidate)
        if diagnosis is not None and diagnosis[1] is not None:  # the API counted it
            recorded_lost = diagnosis[1]
            ideal_read = min(actual.cache_read + recorded_lost, actual.total)
        if recorded_lost < self.min_tokens:
            return _Loss(agreeing, ideal_read, 0, None, cause)
        if diagnosis is not None:  # the API's own word beats the inference
            cause = diagnosis[0]
        elif candidate is not None and (cause is None or cause.kind == "not_served"):
            changed = _version_changed(request, candidate, recorded_lost)
            cause = changed or cause or _not_served(request.index, candidate.index, recorded_lost)
        return _Loss(agreeing, ideal_read, recorded_lost, cause, None)

    def _price(self, model: str | None) -> tuple[float, float]:
        """The model's input price and read multiplier (looked up once per model)."""
        known = self.per_model.get(model)
        if known is None:
            known = self.per_model[model] = (
                self.price_table.price(model, self.provider)[0],
                self.sim.rules.read_multiplier(model),
            )
        return known

    def _costs(
        self,
        request: Request,
        model: str | None,
        charged: Prediction,
        ideal_read: int,
        step: Step,
        written_ttl: str | None,
    ) -> tuple[float, float]:
        """What the request cost as charged, and what it would have cost at its ideal read
        (its writes at ``written_ttl``'s price)."""
        price, multiplier = self._price(model)
        rules_ = self.sim.rules
        actual = self.recorded[request.index]
        cost = _cost(
            charged.tokens,
            price,
            multiplier,
            _write_weight(
                charged, write_split(request.usage) if actual is not None else None, rules_
            ),
        )
        made = charged.tokens.cache_read + charged.tokens.cache_write
        ideal_tokens = Tokens(
            ideal_read,
            max(0, made - ideal_read),
            max(0, step.total - max(made, ideal_read)),
        )
        ideal = _cost(
            ideal_tokens,
            price,
            multiplier,
            ideal_tokens.cache_write * rules_.write_multiplier(written_ttl),
        )
        return cost, ideal


def _scale(
    flat: Flat, actual: Tokens | None, fit: tuple[float, int], unrecorded: bool
) -> tuple[float, int]:
    """The factor from the request's estimates to its recorded tokens, and the tokens of a
    front the log does not record (``fit``, `_fit_front`)."""
    scale, front = 1.0, 0
    estimate = flat.total
    if unrecorded:
        scale, front = fit
        if actual is not None and estimate:
            scale = max(0.0, actual.total - front) / estimate
    elif actual is not None and estimate:
        scale = actual.total / estimate
    return scale, front


def _relabelled(cause: Cause | None, request: Request) -> Cause | None:
    """A cause as the request's kind reads it: a cut at a handoff is the handoff's; a
    compaction call's prefix is its summary, not the history before it."""
    if cause is not None and request.handoff is not None and cause.kind in _CUT_CAUSES:
        cause = _handoff_cause(request.handoff, cause)
    if cause is not None and request.compaction:
        cause = Cause(
            "compaction",
            cause.location,
            "a compaction call: its prefix is the summary and a front the file does not "
            f"show, not the history before it (as replayed: {cause.kind})",
            cause.candidate,
        )
    return cause


def _left_cached(recorded: Tokens | None, sim: Any, model: str | None) -> int | None:
    """What a request's record says it left in the cache: its read plus its write where the
    provider writes at breakpoints and bills them (Anthropic); its whole prompt, in the
    provider's steps, where every prefix is cached and no write is reported (OpenAI, vLLM:
    counting only its read would hide a miss that follows a miss)."""
    if recorded is None:
        return None
    if sim.provider == "anthropic":
        return recorded.cache_read + recorded.cache_write
    total = recorded.total
    return int(sim.ideal(total, total, model))


def _recorded_ideal(ideal_read: int, cached: int | None, whole: bool = False) -> int:
    """The read appending would have given, in recorded terms: no more than the candidate's
    record says it left in the cache (``cached``, `_left_cached`), when it has a record; the
    estimate alone overshoots where the front's size is fitted rather than known. Where the
    request holds the candidate's ``whole`` prefix, exactly what the candidate's record says
    it cached (the estimate would be a guess at a number the bill states)."""
    if cached is None:
        return ideal_read
    if whole:
        return cached
    return min(ideal_read, cached)


# What a loss at ipse's own handoff looks like to the replay and the record: the cut itself.
_CUT_CAUSES = ("history_truncated", "message_edited", "not_served", "messages_changed")


def _handoff_cause(handoff: Mapping[str, Any], cause: Cause) -> Cause:
    """The loss at a request ipse's handoff rewrote: the cut, by design (it pays one rebuild
    to make the requests after it smaller)."""
    anchor = handoff.get("anchor")
    removed = handoff.get("removed_calls")
    detail = (
        f"ipse's handoff cut the history at {anchor or 'a checkpoint'}"
        + (f", removing {removed} tool call(s)" if isinstance(removed, int) else "")
        + f": the prefix after the cut is new by design (as replayed: {cause.kind})"
    )
    return Cause("handoff", cause.location, detail, cause.candidate)


def _diagnosis(request: Request, candidate: Request | None) -> tuple[Cause, int | None] | None:
    """The API's own diagnosis of a cache miss (``diagnostics.cache_miss_reason`` in the
    response: its type and, when given, ``cache_missed_input_tokens``), as a cause and the
    tokens it says were missed; None when the response carries none."""
    diagnostics = request.diagnostics
    if diagnostics is None:
        return None
    reason = diagnostics.get("cache_miss_reason")
    if not is_object(reason):
        return None
    kind = reason.get("type")
    if not isinstance(kind, str) or not kind:
        return None
    missed = reason.get("cache_missed_input_tokens")
    tokens = missed if type(missed) is int and missed >= 0 else None
    name = API_CAUSES.get(kind, "unavailable")
    detail = f"the API's diagnosis: {kind}" + (f", {tokens:,} tokens missed" if tokens else "")
    where = candidate.index if candidate is not None else None
    return Cause(name, "api", detail, where), tokens


def _version_changed(request: Request, candidate: Request, tokens: int) -> Cause | None:
    """``cli_version_changed`` when the harness's version differs between the two calls (its
    update changes the system prompt and tools a session file does not record)."""
    new, old = request.version, candidate.version
    if new is None or old is None or new == old:
        return None
    return Cause(
        "cli_version_changed",
        "front",
        f"the harness went from {old} to {new} between request #{candidate.index} and this "
        f"one: its system prompt and tools changed with it ({tokens:,} tokens rebuilt)",
        candidate.index,
    )


def _not_served(index: int, candidate: int, tokens: int) -> Cause:
    return Cause(
        "not_served",
        "end",
        f"the record reads {tokens:,} tokens less than the prefix shared with request "
        f"#{candidate}: the provider did not serve it (evicted early, another cache, or a "
        "change the model does not see)",
        candidate,
    )


def _fit_front(
    requests: Sequence[Request],
    flattener: Flattener,
    flats: dict[int, Flat],
    recorded: Mapping[int, Tokens | None],
) -> tuple[float, int]:
    """(tokens per estimated token, tokens of the unrecorded front) by least squares over the
    requests rebuilt from a session: recorded total = front + k * estimated messages. The
    requests flattened on the way are kept in ``flats`` (by index) for the replay."""
    points = []
    for request in ipse_progress.track(requests, "measuring requests"):
        if request.body.get("system") is not UNRECORDED_FRONT:
            continue
        actual = recorded[request.index]
        if actual is not None:
            flat = flats[request.index] = flattener.flatten(request.body)
            points.append((float(flat.total), float(actual.total)))
    if len(points) < 2:
        return 1.0, 0
    n = len(points)
    # (sums of lists, not of generators: one frame per point less; `sum` adds as before)
    mean_x = sum([x for x, _ in points]) / n
    mean_y = sum([y for _, y in points]) / n
    var = sum([(x - mean_x) ** 2 for x, _ in points])
    if var == 0:
        return 1.0, 0
    k = sum([(x - mean_x) * (y - mean_y) for x, y in points]) / var
    front = mean_y - k * mean_x
    if k <= 0 or front < 0:
        return mean_y / mean_x if mean_x else 1.0, 0
    return k, round(front)


def _model_warnings(model: str | None, provider: str) -> list[str]:
    """What is assumed for a model missing from the rules or price tables."""
    notes = []
    table = rules(provider)
    if not table.known_model(model):
        minimum = table.min_tokens(model)[0]
        notes.append(
            f"unknown model {model or '(none)'!r} for {provider}: "
            f"assuming a minimum cacheable length of {minimum} tokens"
        )
    price, known = prices().price(model, provider)
    if not known:
        notes.append(
            f"no price for {model or '(none)'!r}: assuming {price} USD per million input tokens"
        )
    return notes


def _best(
    flat: Flat, index: dict[int, list[int]], by_first: dict[int, int], previous: int = 0
) -> tuple[int, int | None]:
    """Positions shared with the best earlier request, and that request's slot; ``previous``:
    the positions of the request before it, tried first (prefix hashes are prefix-closed, so
    when its last is known and the next is not, that is the bisection's answer)."""
    chain = backing(flat.chain)  # positions below len(flat.chain) only
    lo, hi = 0, len(flat.chain)
    if previous and previous < hi and chain[previous - 1] in index and chain[previous] not in index:
        lo = hi = previous  # (the usual answer, where the log goes on from the request before)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chain[mid - 1] in index:
            lo = mid
        else:
            hi = mid - 1
    if lo:
        return lo, index[chain[lo - 1]][0]
    first = flat.first_message
    return 0, by_first.get(first) if first is not None else None


def _write_weight(charged: Prediction, split: tuple[int, int] | None, table: Rules) -> float:
    """The cache writes of a request in base-input tokens: each at its TTL's multiplier, from
    the record's split by TTL when it has one (5-minute writes at 1.25x, 1-hour at 2x),
    else all at the TTL the request wrote with."""
    written = charged.tokens.cache_write
    if not written:
        return 0.0
    if split is None:
        return written * table.write_multiplier(charged.write_ttl)
    five, hour = split
    rest = max(0, written - five - hour)  # (writes the split does not name)
    return (
        five * table.write_multiplier("5m")
        + hour * table.write_multiplier("1h")
        + rest * table.write_multiplier(charged.write_ttl)
    )


def _cost(tokens: Tokens, price: float, read_multiplier: float, write_weight: float) -> float:
    weighted = tokens.uncached + tokens.cache_read * read_multiplier + write_weight
    return price * weighted / 1_000_000
