"""The rule for what one billed call was billed for, and for which records are one call.

Every reader of recorded usage applies it: ``ipse prefix``'s replay (`ipse.prefix._actual`
reads it as `Tokens`) and ``ipse usage``'s bill, down to its status line, which is why this
module imports nothing at all (no JSON library, no dataclasses: Claude Code runs the status
line after every message). Usage as recorded: Anthropic ``input_tokens`` (after
the last breakpoint), ``cache_creation_input_tokens`` (split by TTL in ``cache_creation``),
``cache_read_input_tokens``, ``output_tokens``, and the ``iterations`` a server-side
compaction adds; OpenAI Chat Completions ``prompt_tokens`` with
``prompt_tokens_details.cached_tokens``, Responses ``input_tokens`` with
``input_tokens_details.cached_tokens`` (OpenAI and vLLM report no writes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """`ipse.jsonio.is_object` (a dict answered without the abstract class's check), without
    importing the JSON library."""
    return type(value) is dict or isinstance(value, Mapping)


# Larger counts than this are not token counts (and would not fit the JSON report's integers).
_MAX_TOKENS = 2**53


def _int(value: Any) -> int | None:
    """A recorded token count, or None when the value is not one (negative, huge, not a number)."""
    if type(value) is int:  # (the usual answer first: a plain integer, no union to check)
        return value if 0 <= value < _MAX_TOKENS else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if 0 <= value < _MAX_TOKENS else None


def recorded_split(usage: Mapping[str, Any] | None) -> tuple[int, int, int] | None:
    """The recorded split of input tokens (cache read, cache write, uncached), or None when
    the usage does not say."""
    if not is_object(usage):  # (a dict without the abstract class's check: once a request)
        return None
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    if read is not None or write is not None:
        uncached = _int(usage.get("input_tokens")) or 0
        return read or 0, write or 0, uncached
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
        return cached, 0, max(0, total - cached)
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


def beyond(
    usage: Mapping[str, Any] | None,
) -> tuple[tuple[int, int, int], tuple[int, int]] | None:
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
    top = _with_split(usage) or ((0, 0, 0), (0, 0))
    read = sum(t[0] for t, _ in counted) - top[0][0]
    write = sum(t[1] for t, _ in counted) - top[0][1]
    uncached = sum(t[2] for t, _ in counted) - top[0][2]
    if min(read, write, uncached) < 0 or read + write + uncached == 0:
        return None  # (iterations that do not add up to the top level: not trusted)
    five = sum(s[0] for _, s in counted) - top[1][0]
    hour = sum(s[1] for _, s in counted) - top[1][1]
    split = (five, hour) if min(five, hour) >= 0 and five + hour == write else (write, 0)
    return (read, write, uncached), split


def compacts(usage: Mapping[str, Any] | None) -> bool:
    """Whether the usage lists a server-side compaction among the request's iterations."""
    iterations = usage.get("iterations") if is_object(usage) else None
    return isinstance(iterations, list) and any(
        is_object(i) and i.get("type") == "compaction" for i in iterations
    )


def _with_split(usage: Mapping[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int]] | None:
    """A usage's tokens and its writes by TTL (all 5-minute where it does not say)."""
    tokens = recorded_split(usage)
    if tokens is None:
        return None
    return tokens, write_split(usage) or (tokens[1], 0)


def billed_tokens(usage: Mapping[str, Any] | None) -> tuple[int, int, int, int, int] | None:
    """What one call was billed for, from its recorded usage: uncached input, cache writes
    at 5 minutes and at 1 hour, cache reads, output (with reasoning and thinking, which are
    billed as output), with what the usage lists beyond its top level (`beyond_top_level`: a
    server-side compaction's iterations). Writes the usage does not split by TTL are 5-minute
    writes. None when the usage says nothing of input."""
    tokens = recorded_split(usage)
    if tokens is None or usage is None:
        return None
    output = _int(usage.get("output_tokens"))
    if output is None:
        output = _int(usage.get("completion_tokens")) or 0
    hour = (write_split(usage) or (0, 0))[1]
    read, write, uncached = tokens
    hour = min(hour, write)
    five = write - hour
    extra = beyond(usage)
    if extra is not None:
        (extra_read, _, extra_uncached), (extra_five, extra_hour) = extra
        uncached += extra_uncached
        read += extra_read
        five += extra_five
        hour += extra_hour
    return uncached, five, hour, read, output


def same_call(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether two records of a session are one billed call, ``before``'s the earlier: the one
    rule every reader of recorded usage applies (``ipse prefix``'s replay, ``ipse usage``'s
    bill). Each record is a mapping with its response id (``message_id``), request id
    (``request_id``) and ``usage``, any of them missing. Records with a response id are one
    call when the ids match (the records a streamed response is split into, one content block
    each, and the same response copied into another file); where neither has one, the same
    request id; with no id at all, the call's identity in its usage: the same input side and
    the output count no lower (a streamed response's records each carry the output counted so
    far). A caller asks only of records with nothing but the call's own tool results between
    them."""
    first_id, second_id = before.get("message_id"), after.get("message_id")
    if first_id is not None or second_id is not None:
        return isinstance(first_id, str) and first_id == second_id
    first, second = before.get("request_id"), after.get("request_id")
    if first is not None or second is not None:
        return isinstance(first, str) and first == second
    used, now = before.get("usage"), after.get("usage")
    if not (isinstance(used, Mapping) and isinstance(now, Mapping)):
        return False
    if any(used.get(key) != now.get(key) for key in INPUT_SIDE):
        return False
    output, later = used.get("output_tokens"), now.get("output_tokens")
    if type(output) is int and type(later) is int:
        return later >= output
    return used == now


# What a call's usage says of its input: the same in every record of the call.
INPUT_SIDE = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation",
)


__all__ = [
    "INPUT_SIDE",
    "beyond",
    "billed_tokens",
    "compacts",
    "recorded_split",
    "same_call",
    "write_split",
]
