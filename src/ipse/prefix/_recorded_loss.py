"""A request's loss in the record's terms, where the provider's usage is recorded.

The record is the truth: the ideal read is no more than the request sent nor than the
candidate's record says it left cached (its read plus its write on Anthropic; its whole prompt
where every prefix is cached and no write is reported); a loss under ``min_tokens`` is none,
and the replay's cause is then kept as predicted. Where the response carries the API's own
diagnosis of a miss, its count and its cause win. A loss the record shows and the replay does
not predict is ``cli_version_changed`` when the harness's version changed between the two
calls, else ``not_served``: the content was there to reuse and the provider did not serve it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ipse.jsonio import is_object
from ipse.prefix._actual import agrees, tolerance
from ipse.prefix._causes import API_CAUSES, Cause
from ipse.prefix._flat import Flat
from ipse.prefix._requests import Request
from ipse.prefix._simulate import Prediction, Simulator, Tokens


class Loss(NamedTuple):
    """A request's loss as the record tells it (`RecordedLoss.of`)."""

    agreeing: bool
    ideal_read: int
    lost: int
    cause: Cause | None
    predicted_cause: Cause | None  # the replay's cause, where the record shows no loss


class RecordedLoss:
    """Reads the loss of recorded requests against their candidates' records."""

    def __init__(self, sim: Simulator, recorded: dict[int, Tokens | None], min_tokens: int) -> None:
        self.sim = sim
        self.recorded = recorded  # by request index
        self.min_tokens = min_tokens

    def of(
        self,
        request: Request,
        actual: Tokens,
        prediction: Prediction,
        ideal_read: int,
        whole: bool,
        candidate: tuple[Request, Flat] | None,
        cause: Cause | None,
    ) -> Loss:
        """The loss in the record's terms: the ideal no more than this request sent nor than
        the candidate's record left cached, the API's own count and cause where it gives them;
        a loss under ``min_tokens`` is none (the replay's cause is kept as predicted)."""
        agreeing = agrees(prediction.tokens, actual, tolerance(actual))
        recorded_lost = _recorded_ideal(
            ideal_read,
            _left_cached(self.recorded[candidate[0].index], self.sim, candidate[1].model)
            if candidate is not None
            else None,
            whole,
        )
        # the ideal in the record's terms: no more than this request sent
        ideal_read = min(recorded_lost, actual.total)
        recorded_lost = ideal_read - actual.cache_read
        before = candidate[0] if candidate is not None else None
        diagnosis = _diagnosis(request, before)
        if diagnosis is not None and diagnosis[1] is not None:  # the API counted it
            recorded_lost = diagnosis[1]
            ideal_read = min(actual.cache_read + recorded_lost, actual.total)
        if recorded_lost < self.min_tokens:
            return Loss(agreeing, ideal_read, 0, None, cause)
        if diagnosis is not None:  # the API's own word beats the inference
            cause = diagnosis[0]
        elif before is not None and (cause is None or cause.kind == "not_served"):
            changed = _version_changed(request, before, recorded_lost)
            cause = changed or cause or _not_served(request.index, before.index, recorded_lost)
        return Loss(agreeing, ideal_read, recorded_lost, cause, None)


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
