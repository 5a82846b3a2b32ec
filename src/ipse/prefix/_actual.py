"""What the provider reported, and how well the prediction agrees with it.

Usage as recorded: Anthropic ``input_tokens`` (after the last breakpoint),
``cache_creation_input_tokens``, ``cache_read_input_tokens``; OpenAI Chat Completions
``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``, Responses ``input_tokens`` with
``input_tokens_details.cached_tokens`` (OpenAI and vLLM report no writes). A prediction agrees
with a request when its cache read is within the tolerance of the recorded read: 5% of the
request's input tokens, and at least 128 tokens (OpenAI's step; block estimates are approximate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ipse.jsonio import is_object
from ipse.prefix._simulate import Tokens

TOLERANCE_SHARE = 0.05
TOLERANCE_MIN = 128


# Larger counts than this are not token counts (and would not fit the JSON report's integers).
_MAX_TOKENS = 2**53


def _int(value: Any) -> int | None:
    """A recorded token count, or None when the value is not one (negative, huge, not a number)."""
    if type(value) is int:  # (the usual answer first: a plain integer, no union to check)
        return value if 0 <= value < _MAX_TOKENS else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if 0 <= value < _MAX_TOKENS else None


def actual_tokens(usage: Mapping[str, Any] | None) -> Tokens | None:
    """The recorded split of input tokens, or None when the usage does not say."""
    if not is_object(usage):  # (a dict without the abstract class's check: once a request)
        return None
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    if read is not None or write is not None:
        uncached = _int(usage.get("input_tokens")) or 0
        return Tokens(read or 0, write or 0, uncached)
    for total_key, details_key in (
        ("prompt_tokens", "prompt_tokens_details"),
        ("input_tokens", "input_tokens_details"),
    ):
        total = _int(usage.get(total_key))
        if total is None:
            continue
        details = usage.get(details_key)
        cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else None
        cached = cached or 0
        return Tokens(cached, 0, max(0, total - cached))
    return None


def write_split(usage: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The recorded cache writes by TTL, (5-minute, 1-hour) tokens, when the usage says
    (Anthropic ``cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``)."""
    if not is_object(usage):
        return None
    split = usage.get("cache_creation")
    if not is_object(split):
        return None
    five, hour = (
        _int(split.get("ephemeral_5m_input_tokens")),
        _int(split.get("ephemeral_1h_input_tokens")),
    )
    if five is None and hour is None:
        return None
    return five or 0, hour or 0


def beyond_top_level(usage: Mapping[str, Any] | None) -> tuple[Tokens, tuple[int, int]] | None:
    """What a request was billed for beyond its usage's top level, and those writes by TTL
    (5-minute, 1-hour): where the usage lists the request's sampling iterations
    (``iterations``: a server-side compaction summarises the conversation, then answers from
    the summary), the top level counts the last iteration alone, and the request is billed for
    every one. None when the iterations add nothing (none listed, or no more than the top
    level)."""
    if not is_object(usage):
        return None
    iterations = usage.get("iterations")
    if not (isinstance(iterations, list) and iterations):
        return None
    listed = [_with_split(i) for i in iterations if is_object(i)]
    counted = [c for c in listed if c is not None]
    top = _with_split(usage) or (Tokens(0, 0, 0), (0, 0))
    read = sum(t.cache_read for t, _ in counted) - top[0].cache_read
    write = sum(t.cache_write for t, _ in counted) - top[0].cache_write
    uncached = sum(t.uncached for t, _ in counted) - top[0].uncached
    if min(read, write, uncached) < 0 or read + write + uncached == 0:
        return None  # (iterations that do not add up to the top level: not trusted)
    five = sum(s[0] for _, s in counted) - top[1][0]
    hour = sum(s[1] for _, s in counted) - top[1][1]
    split = (five, hour) if min(five, hour) >= 0 and five + hour == write else (write, 0)
    return Tokens(read, write, uncached), split


def compacts(usage: Mapping[str, Any] | None) -> bool:
    """Whether the usage lists a server-side compaction among the request's iterations."""
    iterations = usage.get("iterations") if is_object(usage) else None
    return isinstance(iterations, list) and any(
        is_object(i) and i.get("type") == "compaction" for i in iterations
    )


def _with_split(usage: Mapping[str, Any]) -> tuple[Tokens, tuple[int, int]] | None:
    """A usage's tokens and its writes by TTL (all 5-minute where it does not say)."""
    tokens = actual_tokens(usage)
    if tokens is None:
        return None
    return tokens, write_split(usage) or (tokens.cache_write, 0)


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
