"""One side of a replay, totalled: what its requests were billed, and how large they were.

Every number is the prefix replay's (`ipse.prefix.analyze`): a request's input cost is its
row's (the record where the request keeps one, the cache model's prediction otherwise), its
tokens the row's split (read, written, uncached). The **conversation** is what lies above the
fixed front (tools, system prompt, settings: `ipse.prefix.Row.front`, which no handoff touches):
a request's front is its first tokens, so it is read where the request read that far, else
written, else uncached; its price (`ipse.prefix.token_cost`) is taken off the row's cost.
Output is priced from the recorded usage of the requests the side sent (a replay assumes the
same answers; a call the side does not make answers nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ipse.prefix import PrefixReport, Request, prices, token_cost
from ipse.prefix._shared import Row, Tokens, billed_tokens


@dataclass(slots=True)
class Side:
    """The totals of one side (as recorded, or with the policy)."""

    requests: int = 0
    input_usd: float = 0.0
    front_usd: float = 0.0
    output_usd: float = 0.0
    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    peak: int = 0
    tokens: int = 0  # summed over requests (for the mean)
    above_limit: int = 0  # requests larger than their conversation's compaction point

    @property
    def conversation_usd(self) -> float:
        return self.input_usd - self.front_usd

    @property
    def bill_usd(self) -> float:
        return self.input_usd + self.output_usd

    @property
    def mean(self) -> float:
        return self.tokens / self.requests if self.requests else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_usd": round(self.input_usd, 6),
            "conversation_usd": round(self.conversation_usd, 6),
            "front_usd": round(self.front_usd, 6),
            "output_usd": round(self.output_usd, 6),
            "bill_usd": round(self.bill_usd, 6),
            "cache_write_tokens": self.cache_write,
            "cache_read_tokens": self.cache_read,
            "uncached_tokens": self.uncached,
            "peak_tokens": self.peak,
            "mean_tokens": round(self.mean),
            "above_limit": self.above_limit,
        }


def front_cost(report: PrefixReport, row: Row) -> float:
    """The part of ``row``'s cost its fixed front was billed (read first, then written)."""
    charged = row.charged
    front = min(row.front, charged.total)
    read = min(front, charged.cache_read)
    written = min(front - read, charged.cache_write)
    split = Tokens(read, written, front - read - written)
    return token_cost(report.provider, row.model, split, row.ttl)


def output_cost(request: Request, provider: str) -> float:
    """What the answer to ``request`` was billed, from its recorded usage (0 where none)."""
    billed = billed_tokens(request.usage)
    if billed is None:
        return 0.0
    price, _ = prices().output_price(request.model, provider)
    return billed[4] * price / 1_000_000


def side_of(
    report: PrefixReport,
    answered: Iterable[Request],
    limits: Mapping[int, int],
) -> Side:
    """The totals of ``report``'s rows; output of the ``answered`` requests (the records of
    the requests the side sent); ``limits``: per request index, the compaction point its
    conversation must stay below (requests not named are not checked)."""
    side = Side()
    for row in report.rows:
        charged = row.charged
        total = charged.total
        side.requests += 1
        side.input_usd += row.cost_usd
        side.front_usd += front_cost(report, row)
        side.cache_read += charged.cache_read
        side.cache_write += charged.cache_write
        side.uncached += charged.uncached
        side.peak = max(side.peak, total)
        side.tokens += total
        limit = limits.get(row.index)
        if limit is not None and total > limit:
            side.above_limit += 1
    side.output_usd = sum(output_cost(r, report.provider) for r in answered)
    return side
