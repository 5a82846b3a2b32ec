"""One request replayed: what the simulator predicts, what the record says, the cause and
cost of a lost reuse, and the ideal it is measured against; a `Row` each, in replay order.

A request's ideal is everything its candidate (`ipse.prefix._index`) sent, as if history had
only been appended to, up to the request's new tail (the last assistant turn and what follows
it). Where the request has recorded usage, the record is the truth (`ipse.prefix._recorded_loss`)
and its cost comes from the recorded split (`ipse.prefix._pricing`). The TTL a request's writes
carried is the record's, else its thread's last (a request that wrote nothing goes on with its
thread's). The loss at a request ipse's own handoff cut is ``handoff``; a compaction call's is
``compaction``, totalled apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipse.prefix._actual import write_ttl
from ipse.prefix._causes import Cause, Side, classify, divergence
from ipse.prefix._flat import MESSAGE_LAYERS, Flat
from ipse.prefix._index import PrefixIndex
from ipse.prefix._pricing import Pricing
from ipse.prefix._recorded_loss import RecordedLoss
from ipse.prefix._requests import UNRECORDED_FRONT, Request
from ipse.prefix._rows import Row, handoff_shown
from ipse.prefix._simulate import Prediction, Simulator, Step, Tokens


class Replay:
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
        self.index = PrefixIndex()
        self.pricing = Pricing(provider, sim.rules)
        self.losses = RecordedLoss(sim, recorded, min_tokens)
        self.cost_ideal = 0.0
        self.chain_ttl: dict[str | None, str] = {}  # thread -> the TTL its last write carried
        self.written: list[str | None] = []  # by slot: the TTL each request's writes carried

    def row(self, request: Request, flat: Flat) -> Row:
        """Replay one request: what the simulator predicts, what the record says, the cause
        of a loss, the cost and the ideal; then index it for the requests after it."""
        actual = self.recorded[request.index]
        step, slot = self._step(request, flat, actual)
        prediction = self.sim.step(step)
        ideal_read, whole = self._ideal_read(flat, slot, step)
        lost = max(0, ideal_read - prediction.tokens.cache_read)
        gap = self._since_candidate(request, slot)
        cause = None
        if lost > 0 and slot is not None:
            cause = self._replayed_cause(request, flat, step.shared, slot, prediction)
            cause = self._expired_first(cause, slot, gap)
        charged = prediction
        agreeing: bool | None = None
        predicted_cause: Cause | None = None
        if actual is not None:  # the record is the truth: cost and loss from it
            charged = Prediction(
                actual, prediction.read_positions, step.ttl or prediction.write_ttl
            )
            candidate = self.index.seen[slot] if slot is not None else None
            agreeing, ideal_read, lost, cause, predicted_cause = self.losses.of(
                request, actual, prediction, ideal_read, whole, candidate, cause
            )
        cause = _relabelled(cause, request)
        written_ttl = step.ttl or prediction.write_ttl
        cost, ideal = self.pricing.costs(
            flat.model,
            charged,
            request.usage if actual is not None else None,
            ideal_read,
            step.total,
            written_ttl,
        )
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
            gap,
            written_ttl,
            handoff_shown(request.handoff),
            request.conversation,
            step.tokens(_front_positions(flat)),
        )
        self.index.add(request, flat)
        self.written.append(written_ttl)
        return row

    def _step(self, request: Request, flat: Flat, actual: Tokens | None) -> tuple[Step, int | None]:
        """What the simulator is asked of the request, and the slot of its candidate."""
        unrecorded = request.body.get("system") is UNRECORDED_FRONT
        scale, front = _scale(flat, actual, self.fit, unrecorded, request.tokens)
        shared, slot = self.index.candidate(request, flat, unrecorded)
        sent = request.time if self.ttl else None  # (with ``ttl``, every request has a time)
        step = Step(
            request.index,
            flat,
            sent.timestamp() if sent is not None else None,
            (request.response_start or sent).timestamp() if sent is not None else None,
            scale,
            shared,
            front,
            self._write_ttl(request),
        )
        return step, slot

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

    def _expired_first(self, cause: Cause, slot: int, gap: float | None) -> Cause:
        """An idle gap since the candidate longer than the TTL its writes carried names the
        expiry, whatever else changed: nothing it cached was left to read (what else differs
        is said in the detail)."""
        ttl = self.written[slot]
        seconds = self.sim.rules.ttl_seconds(ttl)
        if cause.kind == "ttl_expired" or gap is None or seconds is None or gap <= seconds:
            return cause
        return Cause(
            "ttl_expired",
            cause.location,
            f"idle {_duration(gap)} since request #{cause.candidate}, longer than the "
            f"{ttl or _duration(seconds)} TTL: nothing it cached was left (the request also "
            f"differs: {cause.kind}, {cause.detail})",
            cause.candidate,
            cause.value,
        )

    def _replayed_cause(
        self, request: Request, flat: Flat, shared: int, slot: int, prediction: Prediction
    ) -> Cause:
        """Why the replay lost what it did against the candidate in ``slot``."""
        old_request, old_flat = self.index.seen[slot]
        position = shared if shared else divergence(flat, old_flat)
        return classify(
            Side(request.index, request.body, flat, self.provider),
            Side(old_request.index, old_request.body, old_flat, self.provider),
            position,
            prediction.miss,
        )


def _scale(
    flat: Flat,
    actual: Tokens | None,
    fit: tuple[float, int],
    unrecorded: bool,
    sized: int | None = None,
) -> tuple[float, int]:
    """The factor from the request's estimates to its recorded tokens (else to the tokens it is
    ``sized`` at: `Request.tokens`), and the tokens of a front the log does not record (``fit``,
    `_fit_front`)."""
    scale, front = 1.0, 0
    estimate = flat.total
    total = actual.total if actual is not None else sized
    if unrecorded:
        scale, front = fit
        if total is not None and estimate:
            scale = max(0.0, total - front) / estimate
    elif total is not None and estimate:
        scale = total / estimate
    return scale, front


def _front_positions(flat: Flat) -> int:
    """How many of the request's positions come before its messages (tools, system prompt,
    settings: the fixed front no edit of the history touches)."""
    where = flat.where
    for position in range(len(where)):
        if where[position][0] in MESSAGE_LAYERS:
            return position
    return len(where)


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


def _duration(seconds: float) -> str:
    """``46,083 s (12.8 h)``: seconds, and hours where there are several."""
    text = f"{seconds:,.0f} s"
    return f"{text} ({seconds / 3600:.1f} h)" if seconds >= 7200 else text
