"""What the provider reported, and how well the prediction agrees with it.

Usage as recorded: Anthropic ``input_tokens`` (after the last breakpoint),
``cache_creation_input_tokens``, ``cache_read_input_tokens``; OpenAI Chat Completions
``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``, Responses ``input_tokens`` with
``input_tokens_details.cached_tokens`` (OpenAI and vLLM report no writes). A prediction agrees
with a request when its cache read is within the tolerance of the recorded read: 5% of the
request's input tokens, and at least 128 tokens (OpenAI's step; block estimates are approximate).


The rule for what one call was billed for, and which records are one call, is
`ipse.prefix._billing`'s (shared with ``ipse usage``); this module reads it as `Tokens`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ipse.prefix._billing import (
    INPUT_SIDE,
    beyond,
    billed_tokens,
    compacts,
    recorded_split,
    same_call,
    write_split,
)
from ipse.prefix._simulate import Tokens

TOLERANCE_SHARE = 0.05
TOLERANCE_MIN = 128


def actual_tokens(usage: Mapping[str, Any] | None) -> Tokens | None:
    """The recorded split of input tokens, or None when the usage does not say
    (`ipse.prefix._billing.recorded_split`)."""
    split = recorded_split(usage)
    return None if split is None else Tokens(*split)


def beyond_top_level(usage: Mapping[str, Any] | None) -> tuple[Tokens, tuple[int, int]] | None:
    """What a request was billed for beyond its usage's top level, and those writes by TTL
    (`ipse.prefix._billing.beyond`: a server-side compaction's iterations)."""
    found = beyond(usage)
    return None if found is None else (Tokens(*found[0]), found[1])


def write_ttl(usage: Mapping[str, Any] | None) -> str | None:
    """The TTL the record says this request wrote with: ``1h`` when any of its writes were
    1-hour writes, ``5m`` when only 5-minute ones were, None when the record does not say."""
    split = write_split(usage)
    if split is None:
        return None
    if split[1] > 0:
        return "1h"
    return "5m" if split[0] > 0 else None


def tolerance(actual: Tokens) -> float:
    """How far a cache read may be from the recorded one and still agree."""
    return max(TOLERANCE_MIN, TOLERANCE_SHARE * max(actual.total, 1))


def agrees(predicted: Tokens, actual: Tokens, within: float | None = None) -> bool:
    """Whether the predicted cache read is within tolerance of the recorded one (``within``:
    `tolerance` of ``actual``, when the caller has it already)."""
    if within is None:
        within = tolerance(actual)
    return abs(predicted.cache_read - actual.cache_read) <= within


@dataclass(frozen=True, slots=True)
class Agreement:
    """Prediction against recorded usage over the requests that have both."""

    compared: int
    agreeing: int
    read_predicted: int
    read_actual: int
    write_predicted: int
    write_actual: int
    mean_abs_read_error: float

    @property
    def share(self) -> float:
        return self.agreeing / self.compared if self.compared else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "agreeing": self.agreeing,
            "share": round(self.share, 4),
            "tolerance": f"read within {TOLERANCE_SHARE:.0%} of input, >= {TOLERANCE_MIN}",
            "cache_read": {"predicted": self.read_predicted, "actual": self.read_actual},
            "cache_write": {"predicted": self.write_predicted, "actual": self.write_actual},
            "mean_abs_read_error": round(self.mean_abs_read_error, 1),
        }


def agreement(pairs: Iterable[tuple[Tokens, Tokens | None]]) -> Agreement:
    """Agreement over (predicted, actual) pairs; pairs without an actual are skipped."""
    compared = agreeing = rp = ra = wp = wa = 0
    error = 0
    for predicted, actual in pairs:
        if actual is None:
            continue
        compared += 1
        agreeing += agrees(predicted, actual)
        rp += predicted.cache_read
        ra += actual.cache_read
        wp += predicted.cache_write
        wa += actual.cache_write
        error += abs(predicted.cache_read - actual.cache_read)
    return Agreement(compared, agreeing, rp, ra, wp, wa, error / compared if compared else 0.0)


__all__ = [
    "INPUT_SIDE",
    "Agreement",
    "actual_tokens",
    "agreement",
    "agrees",
    "beyond_top_level",
    "billed_tokens",
    "compacts",
    "same_call",
    "tolerance",
    "write_split",
    "write_ttl",
]
