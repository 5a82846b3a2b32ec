"""The autopilot's rule: at one request, do nothing, nudge the agent to checkpoint, or cut.

An agent hands off when it calls the checkpoint tool; nothing makes it remember to, so the agent
CLI's own compaction (a summary in place of the history) fires first. The autopilot watches the
size of each request and acts before that point, where the prompt cache pays the cut back:

- below the **soft** threshold: nothing;
- from the soft threshold on: one **nudge** (a short instruction asking the agent to call the
  checkpoint tool now), once until the next cut;
- once nudged, from the **cut** size on (mode ``cut``): a **cut** at the newest turn boundary,
  unless a cut was made fewer than ``min_requests`` requests ago: the agent did not checkpoint
  when asked, so the autopilot does it where it is cheapest over the long run;
- from the **hard** threshold on (mode ``cut``): a cut, nudged or not.

Nothing is done where the break-even (`ipse.handoff.break_even`) says the cut would not pay back
before the expected end of the session: a cut that leaves nearly as much as it found never pays
back, so the autopilot never cuts every turn.

Where the thresholds fall (`thresholds`): the agent CLI compacts at its **limit** (Claude Code:
its window less min(max output, 20,000) less 13,000; Codex: ``model_auto_compact_token_limit``;
`ipse.agents`), else the model's window less its output; the hard threshold is a margin below it
(`margin`, the larger of 20,000 tokens and a tenth of the limit: the most a request may grow
before the next one, a file read or a command's output, fits in it). The soft threshold is the
size at which a cut to what the conversation would keep pays back within the expected requests
(`break_even_size`), never below a quarter of the limit, never above the hard threshold.

Where the cut goes after an unanswered nudge (`economic_size`): a conversation that grows by
``g`` tokens a request and is cut back to ``a`` tokens whenever it reaches ``S`` reads about
``(S + a) / 2`` cached tokens a request, and writes ``a`` again once every ``(S - a) / g``
requests. With read and write prices ``r`` and ``w`` the cost a request is

    r·(S + a)/2 + w·a·g/(S − a)

which is least at ``S = a + sqrt(2·(w/r)·a·g)`` (the square-root rule of an order size that
balances a fixed cost per order against a holding cost). ``g`` is the conversation's mean growth
per request since the last cut (before one, since its start), ``a`` what a cut at the newest
turn boundary leaves. The cut size is that, never below the soft threshold, never above the
hard one; without a growth to go by (the first request), the hard threshold.

The expected number of requests still to come is, unless given, the number made so far (a
session that has run n requests is as likely to stop before as after 2n), between
`EXPECTED_MIN` and `EXPECTED_MAX`.

Pure and deterministic: the same `RequestState` and `AutopilotPolicy` give the same
`AutopilotStep`, so every replica of a proxy and every replay of a recorded session decides
alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ipse.errors import UsageError
from ipse.handoff._policy import RATES, CacheRates, break_even

Mode: TypeAlias = Literal["off", "nudge", "cut"]
Action: TypeAlias = Literal["nothing", "nudge", "cut"]
MODES: tuple[Mode, ...] = ("off", "nudge", "cut")

EXPECTED_MIN = 3  # requests a session is expected to go on for, at least
EXPECTED_MAX = 20  # ... and at most, when it does not say
MARGIN_MIN = 20_000  # tokens the hard threshold stays below the limit, at least
MARGIN_SHARE = 0.1  # ... or this share of the limit, whichever is larger
SOFT_FLOOR_SHARE = 0.25  # the soft threshold is never below this share of the limit
MIN_REQUESTS = 3  # requests between two cuts, at least


@dataclass(frozen=True, slots=True)
class AutopilotPolicy:
    """What the autopilot may do and where: ``mode`` (``off``, ``nudge``: nudges only, ``cut``:
    nudges, then cuts); ``soft`` and ``hard`` in tokens (None: from the break-even and the
    agent CLI's limit, see the module docstring); the cache ``rates`` the break-even prices
    with; ``expected`` requests still to come (None: as many as so far, bounded);
    ``min_requests`` between two cuts."""

    mode: Mode = "cut"
    soft: int | None = None
    hard: int | None = None
    rates: CacheRates = RATES["anthropic-5m"]
    expected: int | None = None
    min_requests: int = MIN_REQUESTS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"--autopilot: one of {', '.join(MODES)}, got {self.mode!r}")
        for name, value in (("soft", self.soft), ("hard", self.hard)):
            if value is not None and value < 1:
                raise UsageError(f"--autopilot-{name}: a number of tokens above 0, got {value}")
        if self.soft is not None and self.hard is not None and self.soft > self.hard:
            raise UsageError(
                f"--autopilot-soft ({self.soft}) must not be above --autopilot-hard ({self.hard})"
            )
        if self.expected is not None and self.expected < 1:
            raise UsageError(f"expected requests: at least 1, got {self.expected}")
        if self.min_requests < 1:
            raise UsageError(f"requests between cuts: at least 1, got {self.min_requests}")

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "soft": self.soft,
            "hard": self.hard,
            "expected": self.expected,
            "min_requests": self.min_requests,
        }


@dataclass(frozen=True, slots=True)
class Limits:
    """The sizes that bound a conversation: the model's ``window`` and ``max_output``, and the
    agent CLI's ``compaction`` point (None: not known, the window less the output bounds it)."""

    window: int
    max_output: int
    compaction: int | None = None

    @property
    def limit(self) -> int:
        """Where the conversation must stay below: the agent CLI's compaction point, else the
        window less the room for an answer."""
        if self.compaction is not None:
            return max(1, self.compaction)
        return max(1, self.window - min(self.max_output, self.window // 2))

    def to_json(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "max_output": self.max_output,
            "compaction": self.compaction,
            "limit": self.limit,
        }


@dataclass(frozen=True, slots=True)
class RequestState:
    """A conversation at one request, as the autopilot sees it.

    ``tokens``: the request as it would go upstream without a new cut (the provider's usage of
    it, or a count); ``tokens_after``: what a cut at the newest turn boundary would leave (None:
    there is no boundary to cut at); ``cached_share``: the share of ``tokens`` the provider's
    cache holds; ``requests``: the conversation's requests so far, this one included;
    ``since_cut``: requests since the last cut (the agent's or the autopilot's; None: never);
    ``nudged``: a nudge was placed since that cut, at an earlier request; ``growth``: the
    tokens a request added on average since that cut (before one, since the start; None: not
    known yet)."""

    tokens: int
    tokens_after: int | None
    limits: Limits
    cached_share: float = 1.0
    requests: int = 1
    since_cut: int | None = None
    nudged: bool = False
    growth: float | None = None


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The soft and hard thresholds a request was judged by, the limit they stay under, and
    the size from which a nudged conversation is cut (``cut``, between the two)."""

    soft: int
    hard: int
    limit: int
    cut: int | None = None

    def to_json(self) -> dict[str, int]:
        found = {"soft": self.soft, "hard": self.hard, "limit": self.limit}
        return found if self.cut is None else {**found, "cut": self.cut}


@dataclass(frozen=True, slots=True)
class AutopilotStep:
    """What the autopilot does at one request, and why.

    ``tokens`` and ``tokens_after`` are the sizes before and after a cut; ``break_even_turns``
    the requests a cut needs to pay back (None: never); ``cache_cost`` the base-price tokens
    the request after a cut costs more than it would have (the cache written again: what the
    cut pays); ``expected`` the requests still expected."""

    action: Action
    reason: str
    thresholds: Thresholds
    tokens: int
    tokens_after: int | None
    break_even_turns: int | None
    cache_cost: float
    expected: int

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "reason": self.reason,
            **self.thresholds.to_json(),
            "tokens": self.tokens,
            "tokens_after": self.tokens_after,
            "break_even_turns": self.break_even_turns,
            "cache_cost": round(self.cache_cost, 1),
            "expected": self.expected,
        }


def margin(limit: int) -> int:
    """How far below the limit the hard threshold stays by default."""
    return max(MARGIN_MIN, int(limit * MARGIN_SHARE))


def expected_requests(requests: int, policy: AutopilotPolicy) -> int:
    """The requests still expected: the policy's, else as many as so far, bounded."""
    if policy.expected is not None:
        return policy.expected
    return min(max(requests, EXPECTED_MIN), EXPECTED_MAX)


def break_even_size(tokens_after: int, cached_share: float, rates: CacheRates, turns: int) -> int:
    """The smallest size whose cut to ``tokens_after`` pays back within ``turns`` requests:
    D(turns) >= 0 in `ipse.handoff._policy`'s notation, solved for the size T."""
    share = min(max(cached_share, 0.0), 1.0)
    keep = share * rates.read + (1.0 - share) * rates.write + (turns - 1) * rates.read
    if keep <= 0:
        return 2**62
    return int(-(-tokens_after * (rates.write + (turns - 1) * rates.read) // keep))


def economic_size(tokens_after: int, growth: float, rates: CacheRates) -> int:
    """The size at which cutting back to ``tokens_after``, again and again, costs least per
    request when the conversation grows by ``growth`` tokens a request (module docstring)."""
    if rates.read <= 0 or growth <= 0:
        return 2**62
    return tokens_after + math.ceil(math.sqrt(2 * rates.write / rates.read * tokens_after * growth))


def thresholds(state: RequestState, policy: AutopilotPolicy) -> Thresholds:
    """The thresholds for ``state`` (see the module docstring)."""
    limit = state.limits.limit
    hard = policy.hard if policy.hard is not None else max(1, limit - margin(limit))
    if policy.soft is not None:
        soft = min(policy.soft, hard)
    elif state.tokens_after is None:
        soft = min(max(int(limit * SOFT_FLOOR_SHARE), 1), hard)
    else:
        turns = expected_requests(state.requests, policy)
        paying = break_even_size(state.tokens_after, state.cached_share, policy.rates, turns)
        soft = min(max(paying, int(limit * SOFT_FLOOR_SHARE), 1), hard)
    if state.tokens_after is None or state.growth is None:
        return Thresholds(soft, hard, limit)
    cheapest = economic_size(state.tokens_after, state.growth, policy.rates)
    return Thresholds(soft, hard, limit, min(max(cheapest, soft), hard))


def autopilot_step(state: RequestState, policy: AutopilotPolicy) -> AutopilotStep:
    """Nothing, a nudge or a cut at this request (see the module docstring)."""
    limits = thresholds(state, policy)
    expected = expected_requests(state.requests, policy)
    turns, cost = None, 0.0
    if state.tokens_after is not None:
        turns, _, cost = break_even(
            state.tokens, state.tokens_after, state.cached_share, policy.rates
        )

    def step(action: Action, reason: str) -> AutopilotStep:
        return AutopilotStep(
            action, reason, limits, state.tokens, state.tokens_after, turns, cost, expected
        )

    if policy.mode == "off":
        return step("nothing", "the autopilot is off")
    if state.tokens < limits.soft:
        return step("nothing", f"below the soft threshold ({state.tokens} < {limits.soft})")
    if state.tokens_after is None:
        return step("nothing", "no turn boundary to cut at")
    if turns is None or turns > expected:
        paid = "never pays back" if turns is None else f"pays back after {turns} requests"
        return step("nothing", f"a cut {paid}, {expected} expected")
    unanswered = state.nudged and limits.cut is not None and state.tokens >= limits.cut
    if policy.mode == "cut" and (state.tokens >= limits.hard or unanswered):
        if state.since_cut is not None and state.since_cut < policy.min_requests:
            return step(
                "nothing",
                f"{state.since_cut} request(s) since the last cut (at least {policy.min_requests})",
            )
        if state.tokens >= limits.hard:
            return step("cut", f"at the hard threshold ({state.tokens} >= {limits.hard})")
        return step(
            "cut", f"nudged, not checkpointed, at the cut size ({state.tokens} >= {limits.cut})"
        )
    if state.nudged:
        return step("nothing", "nudged already since the last cut")
    return step("nudge", f"at the soft threshold ({state.tokens} >= {limits.soft})")


__all__ = [
    "EXPECTED_MAX",
    "EXPECTED_MIN",
    "MARGIN_MIN",
    "MIN_REQUESTS",
    "MODES",
    "Action",
    "AutopilotPolicy",
    "AutopilotStep",
    "Limits",
    "Mode",
    "RequestState",
    "Thresholds",
    "autopilot_step",
    "break_even_size",
    "economic_size",
    "expected_requests",
    "margin",
    "thresholds",
]
