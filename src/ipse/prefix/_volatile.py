"""Values that change from one request to the next: timestamps, dates, UUIDs, counters.

Used twice: to hint why a system prompt changed (`ipse.prefix._causes`) and to lint the front
of a request before it is sent (`ipse.prefix._lint`). Patterns are deliberately narrow: a
false "volatile" on a stable prompt costs more attention than it saves.
"""

from __future__ import annotations

import functools
import re


@functools.cache
def patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, pattern) in the order they are tried, compiled on first use: a replay asks only
    when a system prompt changed, and compiling them took 4 million instructions (about a
    millisecond) of every start of ``ipse prefix`` (measured under valgrind's cachegrind)."""
    return (
        (
            "uuid",
            re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        ),
        ("timestamp", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(:\d{2})?")),
        ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
        ("time", re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")),
        ("epoch", re.compile(r"\b1[5-9]\d{8}(\d{3})?\b")),
        (
            "date",
            re.compile(
                r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? \d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|"
                r"Sep|Oct|Nov|Dec)[a-z]* \d{4}\b"
            ),
        ),
    )


def volatile_values(text: str) -> list[tuple[str, str]]:
    """Every (kind, value) found in ``text``, in order of the patterns."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for kind, pattern in patterns():
        for match in pattern.finditer(text):
            value = match.group(0)
            if value not in seen:
                seen.add(value)
                found.append((kind, value))
    return found


def changed_span(old: str, new: str) -> tuple[int, str, str]:
    """Where two texts first differ, and the differing middle of each."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return start, old[start : len(old) - end], new[start : len(new) - end]


def hint(old: str, new: str) -> str | None:
    """A name for the changed span when it looks volatile (a timestamp, a date, ...)."""
    start, old_span, new_span = changed_span(old, new)
    lo = max(0, start - 24)
    window = new[lo : start + len(new_span) + 24]
    for kind, value in volatile_values(window):
        offset = window.find(value) + lo
        if offset <= start + len(new_span) and offset + len(value) >= start:
            return f"looks like a {kind} ({value!r})"
    if old_span.strip().isdigit() and new_span.strip().isdigit():
        return f"looks like a counter ({old_span.strip()} -> {new_span.strip()})"
    return None
