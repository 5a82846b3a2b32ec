"""Cache simulators, one per provider behind one interface: replay requests, predict tokens.

Each simulator holds the provider's cache as a dict from (model, prefix hash) to an entry, and
answers one request at a time (`Simulator.step`) with the tokens it would read from the cache,
write to it, and process uncached, plus the reason reuse stopped short of the prefix shared with
an earlier request when the cache mechanics (not the content) were to blame: an entry that
expired, one still being written by a request in flight, a prefix below the minimum, no
breakpoint near enough. Content divergences are `ipse.prefix._causes`' concern.

* Anthropic: entries only at ``cache_control`` breakpoints (at most 4), a read walks back at most
  20 positions per breakpoint, TTL 5 min or 1 h from the request's start (the breakpoint's, or
  the one the record says the request wrote with: `Step.ttl`), refreshed by each hit,
  usable once the writer's response has begun, a minimum cacheable length per model.
* OpenAI: every prefix from 1,024 tokens is cached; hits in steps of 128 tokens; idle TTL.
* vLLM: 16-token blocks, full blocks only, the last token of a full hit recomputed.

Token counts are per-position estimates times the request's ``scale`` (recorded total over
estimated total, when usage was recorded), so predictions speak the provider's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from ipse.prefix._columns import backing
from ipse.prefix._flat import Flat
from ipse.prefix._rules import Rules, rules


class Tokens(msgspec.Struct, frozen=True):
    """Input tokens of one request, split by what the cache did with them.

    A msgspec struct, not a dataclass: three are built for each request a replay predicts; as
    frozen dataclasses, `Tokens` and `Prediction` cost it 2.4% more instructions (152 requests
    of a 3 MB Claude Code session, `python bench/replay_instructions.py`).
    """

    cache_read: int
    cache_write: int
    uncached: int

    @property
    def total(self) -> int:
        return self.cache_read + self.cache_write + self.uncached

    def to_json(self) -> dict[str, int]:
        return {
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "uncached": self.uncached,
        }


@dataclass(slots=True, eq=False)
class Step:
    """One request as a simulator sees it; ``total``: its tokens (`tokens` of all its
    positions)."""

    index: int
    flat: Flat = field(repr=False)
    time: float | None  # request start, seconds since the epoch; None: TTLs not modelled
    response_start: float | None  # when its response began (entries usable from then)
    scale: float = 1.0
    shared: int = 0  # positions shared with the best earlier request
    front: int = 0  # tokens of an unrecorded first position (added to its estimate)
    ttl: str | None = None  # the TTL its writes carry, as recorded (None: its breakpoints')
    total: int = field(init=False)
    # the request's positions and their cumulative estimates (read below ``_positions`` only:
    # a shared store's list goes on past this request); asked for a handful of times per
    # request, so read once
    _positions: int = field(init=False, repr=False)
    _cum: Sequence[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flat = self.flat
        self._positions = len(flat.cum)
        self._cum = backing(flat.cum)
        self.total = self.tokens(len(flat.chain))

    def tokens(self, positions: int) -> int:
        """Tokens of the first ``positions`` positions."""
        if positions <= 0:
            return 0
        if positions > self._positions:
            raise IndexError("position out of range")
        return round(self._cum[positions - 1] * self.scale) + self.front


@dataclass(frozen=True, slots=True)
class Miss:
    """Why the cache served less than the prefix shared with an earlier request."""

    kind: str  # ttl_expired | concurrent | below_minimum | no_breakpoint
    detail: str
    position: int
    gap_s: float | None = None


class Prediction(msgspec.Struct, frozen=True):
    """What a simulator predicts for one request: the tokens, the positions read from the cache,
    the TTL of its writes and why it read less than it shared (a msgspec struct: see
    `Tokens`)."""

    tokens: Tokens
    read_positions: int
    write_ttl: str | None = None
    miss: Miss | None = None


@dataclass(slots=True)
class _Entry:
    available: float | None
    expires: float | None
    last_used: float | None
    writer: int
    ttl: str | None


class Simulator(Protocol):
    """Replays requests in order; one instance per log."""

    provider: str
    rules: Rules

    def step(self, step: Step) -> Prediction:
        """Predict one request and update the cache with it."""
        ...

    def ideal(self, tokens: int, total: int, model: str | None) -> int:
        """The read a request would get if the cache held its first ``tokens`` tokens."""
        ...


def _usable(entry: _Entry | _Shared, now: float | None) -> str | None:
    """None when usable; else why not."""
    if now is None:
        return None
    if entry.available is not None and now < entry.available:
        return "concurrent"
    if entry.expires is not None and now > entry.expires:
        return "ttl_expired"
    return None


class AnthropicSimulator:
    """Explicit breakpoints, bounded lookback, TTLs refreshed by hits, minimum per model."""

    provider = "anthropic"

    def __init__(self) -> None:
        self.rules = rules("anthropic")
        self._store: dict[tuple[str | None, int], _Entry] = {}
        self._max = int(self.rules.value("max_breakpoints"))
        self._lookback = int(self.rules.value("lookback_positions"))
        self._minimums: dict[str | None, int] = {}  # model -> its minimum (asked every step)
        self._seconds: dict[str | None, float | None] = {}  # TTL -> `ttl_seconds` (likewise)

    def _ttl_seconds(self, ttl: str | None) -> float | None:
        """`Rules.ttl_seconds`, kept here: asked for each breakpoint of each request."""
        try:
            return self._seconds[ttl]
        except KeyError:
            seconds = self._seconds[ttl] = self.rules.ttl_seconds(ttl)
            return seconds

    def ideal(self, tokens: int, total: int, model: str | None) -> int:
        return tokens  # a prefix below the minimum is reported as lost (cause below_minimum)

    def step(self, step: Step) -> Prediction:
        flat, now = step.flat, step.time
        model = flat.model
        store = self._store
        breakpoints = list(flat.marks[: self._max])
        minimum = self._minimums.get(model)
        if minimum is None:
            minimum = self._minimums[model] = self.rules.min_tokens(model)[0]
        hit = 0
        hit_entry: _Entry | None = None
        groups, chain = backing(flat.groups), backing(flat.chain)  # breakpoints are positions
        for bp in breakpoints:
            floor = groups[bp] - self._lookback
            p = bp
            while p >= hit and groups[p] > floor:
                entry = store.get((model, chain[p]))
                if entry is not None and _usable(entry, now) is None:
                    hit, hit_entry = p + 1, entry
                    break
                p -= 1
        if hit_entry is not None and now is not None:
            self._refresh(hit_entry, now)
        miss = self._explain(step, hit, breakpoints, minimum)
        written = hit
        write_ttl: str | None = None
        for bp in breakpoints:
            if step.tokens(bp + 1) < minimum:
                continue
            key = (model, chain[bp])
            ttl = step.ttl or flat.ttls[bp]
            entry = store.get(key)
            if bp + 1 <= hit:
                if entry is not None and now is not None:
                    self._refresh(entry, now)
                continue
            seconds = self._ttl_seconds(ttl)
            start = step.response_start if step.response_start is not None else now
            store[key] = _Entry(
                available=start,
                expires=now + seconds if now is not None and seconds is not None else None,
                last_used=now,
                writer=step.index,
                ttl=ttl,
            )
            written = bp + 1
            write_ttl = write_ttl or ttl
        read = step.tokens(hit)
        write = step.tokens(written) - read
        return Prediction(Tokens(read, write, step.total - read - write), hit, write_ttl, miss)

    def _refresh(self, entry: _Entry, now: float) -> None:
        seconds = self._ttl_seconds(entry.ttl)
        if seconds is not None:
            entry.expires = max(entry.expires or now, now + seconds)
        entry.last_used = now

    def _explain(self, step: Step, hit: int, breakpoints: list[int], minimum: int) -> Miss | None:
        """Why the read stopped before the shared prefix's end (None when it did not)."""
        flat, now = step.flat, step.time
        shared = min(step.shared, len(flat.chain))
        if shared <= hit or step.tokens(shared) - step.tokens(hit) <= 0:
            return None
        if not breakpoints:
            return Miss("no_breakpoint", "the request has no cache_control breakpoint", hit)
        if step.tokens(breakpoints[-1] + 1) < minimum:
            return Miss(
                "below_minimum",
                f"{step.tokens(breakpoints[-1] + 1)} tokens up to the last breakpoint, "
                f"below the minimum of {minimum} for {flat.model or 'this model'}",
                breakpoints[-1],
            )
        for p in range(shared - 1, hit - 1, -1):
            entry = self._store.get((flat.model, flat.chain[p]))
            if entry is None:
                continue
            why = _usable(entry, now)
            if why == "ttl_expired" and now is not None:
                gap = now - (entry.last_used if entry.last_used is not None else now)
                return Miss(
                    "ttl_expired",
                    f"idle {gap:.0f} s since request #{entry.writer} used it, "
                    f"longer than the {entry.ttl or '5m'} TTL",
                    p,
                    gap,
                )
            if why == "concurrent":
                return Miss(
                    "concurrent",
                    f"sent before the response to request #{entry.writer} began",
                    p,
                )
            return Miss(
                "no_breakpoint",
                f"an entry exists at position {p}, but no breakpoint lies within "
                f"{self._lookback} positions after it",
                p,
            )
        return Miss(
            "no_breakpoint",
            "no earlier request wrote a cache entry inside the shared prefix "
            "(no breakpoint there, or it was below the minimum)",
            hit,
        )


class _Shared:
    """An entry of an automatic cache: written once; its expiry and last use live in a cell
    that every entry of one request's prefix shares (see `_AutomaticSimulator.step`)."""

    __slots__ = ("available", "cell", "ttl", "writer")

    def __init__(self, available: float | None, cell: list[float | None], writer: int) -> None:
        self.available = available
        self.cell = cell  # [expires, last_used]
        self.writer = writer
        self.ttl: str | None = None

    @property
    def expires(self) -> float | None:
        return self.cell[0]

    @property
    def last_used(self) -> float | None:
        return self.cell[1]


class _AutomaticSimulator:
    """Every prefix is cached (OpenAI, vLLM); subclasses say how hits are rounded.

    A request refreshes every entry of its prefix. Done entry by entry, a conversation of n
    requests costs n² updates; instead the entries of a request's prefix share one cell, and
    a request that extends the one before it (its positions are the first of this one's, same
    model) updates that cell once and touches only its new positions. After each request, every
    position of its prefix points to its cell, and only those do: so updating the cell in
    place refreshes exactly the positions the request holds."""

    provider = "openai"

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.rules = rules(provider)
        self._store: dict[tuple[str | None, int], _Shared] = {}
        self._ttl = self.rules.ttl_seconds(None)
        self._last: tuple[Flat, list[float | None]] | None = None

    def ideal(self, tokens: int, total: int, model: str | None) -> int:
        return self.round(tokens, total, None, minimum=False)

    def round(self, tokens: int, total: int, model: str | None, *, minimum: bool = True) -> int:
        raise NotImplementedError

    def step(self, step: Step) -> Prediction:
        flat, now, model = step.flat, step.time, step.flat.model
        store = self._store
        lo, hi = 0, len(flat.chain)  # the longest usable prefix, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            entry = store.get((model, flat.chain[mid - 1]))
            if entry is not None and _usable(entry, now) is None:
                lo = mid
            else:
                hi = mid - 1
        hit = lo
        miss = self._explain(step, hit)
        total = step.total
        read = self.round(step.tokens(hit), total, model)
        start = step.response_start if step.response_start is not None else now
        expires = now + self._ttl if now is not None and self._ttl is not None else None
        last = self._last
        first = 0
        if last is not None and last[0].model == model and flat.extends(last[0]):
            cell = last[1]
            cell[0], cell[1] = expires, now
            first = len(last[0].chain)
        else:
            cell = [expires, now]
        chain = flat.chain
        for p in range(first, len(chain)):
            key = (model, chain[p])
            entry = store.get(key)
            if entry is None:
                store[key] = _Shared(start, cell, step.index)
            else:
                entry.cell = cell
        self._last = (flat, cell)
        return Prediction(Tokens(read, 0, total - read), hit, None, miss)

    def _explain(self, step: Step, hit: int) -> Miss | None:
        flat = step.flat
        shared = min(step.shared, len(flat.chain))
        if shared <= hit and step.tokens(shared) <= self.round(step.tokens(hit), step.total, None):
            return None
        minimum = self.rules.min_tokens(flat.model)[0]
        if step.total < minimum:
            return Miss(
                "below_minimum",
                f"{step.total} prompt tokens, below the minimum of {minimum}",
                0,
            )
        entry = self._store.get((flat.model, flat.chain[shared - 1])) if shared else None
        if entry is None:
            return None
        why = _usable(entry, step.time)
        if why == "ttl_expired" and step.time is not None:
            gap = step.time - (entry.last_used or step.time)
            return Miss("ttl_expired", f"idle {gap:.0f} s, longer than the retention", hit, gap)
        if why == "concurrent":
            return Miss("concurrent", f"sent before request #{entry.writer} was processed", hit)
        return None


class OpenAISimulator(_AutomaticSimulator):
    """Automatic caching from 1,024 tokens, in steps of 128."""

    def __init__(self) -> None:
        super().__init__("openai")
        self._step = int(self.rules.value("step_tokens"))

    def round(self, tokens: int, total: int, model: str | None, *, minimum: bool = True) -> int:
        floor = self.rules.min_tokens(model)[0] if minimum else 0
        tokens = min(tokens, total)
        if tokens < floor or (minimum and total < floor):
            return 0
        return floor + (tokens - floor) // self._step * self._step


class VllmSimulator(_AutomaticSimulator):
    """Automatic prefix caching in 16-token blocks."""

    def __init__(self) -> None:
        super().__init__("vllm")
        self._block = int(self.rules.value("block_tokens"))
        self._recompute = bool(self.rules.value("recompute_last_token"))

    def round(self, tokens: int, total: int, model: str | None, *, minimum: bool = True) -> int:
        limit = total - 1 if self._recompute else total
        return max(0, min(tokens, limit)) // self._block * self._block


def simulator(provider: str) -> Simulator:
    """A fresh simulator for ``anthropic``, ``openai`` or ``vllm``."""
    if provider == "anthropic":
        return AnthropicSimulator()
    if provider == "openai":
        return OpenAISimulator()
    if provider == "vllm":
        return VllmSimulator()
    rules(provider)  # raises the UsageError naming the known providers
    raise AssertionError(provider)
