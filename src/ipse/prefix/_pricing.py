"""What a request cost, and what it would have cost at its ideal read, at the model's prices.

Input at the model's price; cache reads at the provider's read multiplier; cache writes at
their TTL's multiplier (5-minute writes at 1.25x base input, 1-hour ones at 2x), from the
record's split by TTL when it has one, else all at the TTL the request wrote with. What the
record bills beyond its top level (a server-side compaction's iterations) is added to both
the cost and the ideal: no read could have saved it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipse.prefix._actual import beyond_top_level, write_split
from ipse.prefix._rules import Rules, prices, rules
from ipse.prefix._simulate import Prediction, Tokens


class Pricing:
    """The costs of one provider's requests, each model's prices looked up once."""

    def __init__(self, provider: str, rules: Rules) -> None:
        self.provider = provider
        self.rules = rules
        self.price_table = prices()
        self.per_model: dict[str | None, tuple[float, float]] = {}  # model -> price, read mult.

    def price(self, model: str | None) -> tuple[float, float]:
        """The model's input price and read multiplier (looked up once per model)."""
        known = self.per_model.get(model)
        if known is None:
            known = self.per_model[model] = (
                self.price_table.price(model, self.provider)[0],
                self.rules.read_multiplier(model),
            )
        return known

    def costs(
        self,
        model: str | None,
        charged: Prediction,
        usage: Mapping[str, Any] | None,
        ideal_read: int,
        total: int,
        written_ttl: str | None,
    ) -> tuple[float, float]:
        """What the request cost as charged (its writes split by TTL as ``usage``, its record,
        says where it does), and what it would have cost at its ideal read out of its ``total``
        input tokens (its writes at ``written_ttl``'s price); both with what the record bills
        beyond its top level (`beyond_top_level`: a server-side compaction's summarising pass),
        which no read could have saved."""
        price, multiplier = self.price(model)
        rules_ = self.rules
        cost = _cost(
            charged.tokens,
            price,
            multiplier,
            _write_weight(charged, write_split(usage), rules_),
        )
        beyond = beyond_top_level(usage)
        extra = 0.0  # iterations the top level leaves out: billed, and at their ideal
        if beyond is not None:
            tokens, (five, hour) = beyond
            weight = five * rules_.write_multiplier("5m") + hour * rules_.write_multiplier("1h")
            extra = _cost(tokens, price, multiplier, weight)
        made = charged.tokens.cache_read + charged.tokens.cache_write
        ideal_tokens = Tokens(
            ideal_read,
            max(0, made - ideal_read),
            max(0, total - max(made, ideal_read)),
        )
        ideal = _cost(
            ideal_tokens,
            price,
            multiplier,
            ideal_tokens.cache_write * rules_.write_multiplier(written_ttl),
        )
        return cost + extra, ideal + extra


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


def token_cost(provider: str, model: str | None, tokens: Tokens, write_ttl: str | None) -> float:
    """USD of ``tokens`` of one request of ``model``: uncached input at the model's price, cache
    reads at the provider's read multiplier, writes at ``write_ttl``'s (the price `Pricing`
    charges a request the record does not split by TTL)."""
    table = rules(provider)
    price = prices().price(model, provider)[0]
    weight = tokens.cache_write * table.write_multiplier(write_ttl) if tokens.cache_write else 0.0
    return _cost(tokens, price, table.read_multiplier(model), weight)
