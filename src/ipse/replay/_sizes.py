"""How many tokens a history is, in the provider's tokens, read off the usage the session
recorded.

The autopilot decides from the size of each request (the provider's usage where there is one);
the replay asks the same of requests that were never sent, so it counts them as the session's
own requests were billed. Along a line, each recorded request's input less the one before it
is what the items between them added (the assistant's answer, the tool results): those items
share that difference in proportion to their JSON bytes (`LineTokens`). Items no difference
covers (the first request's, an agent CLI's opening after a compaction, items a rewrite adds)
count ``per_byte`` tokens a JSON byte, fitted by least squares to the recorded requests
(`fit`). The fixed part of a request (``base``: front and system prompt, tools, what the usage
holds that a session file does not record) is the first recorded request's input less its
items. A request never sent is sized from the one it rewrites: its recorded tokens, less what
its items count as recorded, plus what the forwarded items count, so what the counts do not
explain stays as the record has it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.prefix._shared import actual_tokens, windows
from ipse.replay._lines import Line, Stretch

MIN_POINTS = 3  # recorded requests a line needs for a fit of its own


class ByteSizes:
    """The JSON bytes of items, each serialized once (items are shared across requests)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, int]] = {}

    def of(self, item: Any) -> int:
        found = self._known.get(id(item))
        if found is not None and found[0] is item:
            return found[1]
        size = len(jsonio.dumps(item))
        self._known[id(item)] = (item, size)
        return size

    def total(self, items: Iterable[Any]) -> int:
        of = self.of
        return sum([of(item) for item in items])

    def front(self, front: Mapping[str, Any]) -> int:
        """The bytes of everything but the history (model, system prompt, tools, settings)."""
        return sum(self.of(value) for value in front.values())


@dataclass(frozen=True, slots=True)
class Calibration:
    """Tokens per JSON byte of the items no recorded difference covers; ``points``: the
    recorded requests it was fitted to (0: the window table's bytes per token)."""

    per_byte: float
    points: int

    def tokens(self, size: int) -> int:
        """The tokens of ``size`` bytes."""
        return int(size * self.per_byte)

    def to_json(self) -> dict[str, Any]:
        return {"tokens_per_byte": round(self.per_byte, 4), "fitted_to": self.points}


def default() -> Calibration:
    """No recorded usage to fit: the window table's bytes per token."""
    return Calibration(1.0 / windows().bytes_per_token, 0)


def fit(points: Sequence[tuple[int, int]], fallback: Calibration | None = None) -> Calibration:
    """The tokens per byte of (bytes, recorded tokens) points: the slope of a line fitted by
    least squares (its intercept is the part of each request the bytes do not show: a front
    the input does not record); through the origin where that intercept would be negative;
    ``fallback`` (else `default`) with fewer than `MIN_POINTS`."""
    if len(points) < MIN_POINTS:
        return fallback or default()
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var > 0:
        k = sum((x - mean_x) * (y - mean_y) for x, y in points) / var
        if k > 0 and mean_y - k * mean_x >= 0:
            return Calibration(k, n)
    squares = sum(x * x for x, _ in points)
    if squares <= 0:
        return fallback or default()
    k = sum(x * y for x, y in points) / squares
    return Calibration(k, n) if k > 0 else fallback or default()


def recorded_total(usage: Mapping[str, Any] | None) -> int | None:
    """A request's recorded input tokens (read, written and uncached), None where not recorded."""
    tokens = actual_tokens(usage)
    return None if tokens is None else tokens.total


class LineTokens:
    """The tokens of each item of a line (see the module docstring), with prefix sums."""

    def __init__(self, line: Line, sizes: ByteSizes, calibration: Calibration) -> None:
        self.per_byte = calibration.per_byte
        items = line.items()
        self.items = items
        self.sizes = sizes
        tokens = [calibration.tokens(sizes.of(item)) for item in items]
        offsets = line.offsets()
        for n, stretch in enumerate(line.stretches):
            self._spread(line, n, stretch, tokens, offsets[n])
        self.cum = [0]
        for count in tokens:
            self.cum.append(self.cum[-1] + count)
        self.by_id = {id(item): count for item, count in zip(items, tokens, strict=True)}
        self.front = calibration.tokens(sizes.front(line.stretches[0].front))
        self.base, self.openings = self._base(line)

    def _spread(self, line: Line, n: int, stretch: Stretch, tokens: list[int], offset: int) -> None:
        """Give the items between each two recorded requests of a stretch the difference of
        their recorded input, in proportion to their bytes (where it is positive)."""
        previous: tuple[int, int] | None = None  # (end item in the line, recorded tokens)
        for member in stretch.members:
            total = recorded_total(member.request.usage)
            if total is None or member.request.off_path:
                continue
            end = line.end(n, member) + 1
            if previous is not None and end > previous[0] and total > previous[1]:
                first = max(previous[0], offset)
                span = range(first, end)
                weights = [self.sizes.of(self.items[i]) for i in span]
                whole = sum(weights)
                if whole > 0:
                    share = (total - previous[1]) / whole
                    for i, weight in zip(span, weights, strict=True):
                        tokens[i] = round(weight * share)
            if previous is None or end >= previous[0]:
                previous = (end, total)

    def _base(self, line: Line) -> tuple[int, list[int]]:
        """The fixed part of the line's requests, and the tokens of each stretch's opening
        (the agent CLI's summary and what it carried over: its first request less the base)."""
        base: int | None = None
        openings = [0] * len(line.stretches)
        for n, member in line.members():
            total = recorded_total(member.request.usage)
            if total is None:
                continue
            if base is None and n == 0:
                base = max(0, total - self.cum[line.end(0, member) + 1])
            if n and not openings[n] and base is not None:
                openings[n] = max(0, total - base)
        return (self.front if base is None else base), openings

    @property
    def beyond(self) -> int:
        """What the base holds beyond the front's bytes (a front the input does not record)."""
        return max(0, self.base - self.front)

    def count(self, value: Any) -> int:
        """The tokens of a message's items (as recorded), or of any other JSON value (its
        bytes): the count the autopilot plans with."""
        known = self.by_id.get(id(value))
        if known is not None:
            return known
        if isinstance(value, list | tuple) and value and all(id(v) in self.by_id for v in value):
            return sum(self.by_id[id(v)] for v in value)
        return int(len(jsonio.dumps(value)) * self.per_byte)

    def between(self, start: int, end: int) -> int:
        """The tokens of the line's items ``start`` to ``end - 1``."""
        return self.cum[end] - self.cum[start] if end > start else 0

    def new(self, items: Iterable[Any]) -> int:
        """The tokens of items the line does not hold (a cut's rewritten items, a nudge)."""
        return int(self.sizes.total(items) * self.per_byte)
