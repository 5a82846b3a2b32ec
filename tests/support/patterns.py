"""What a compiled regular expression can do to a long run: its repeats, and whether any of them
may give back what it read (the only way a pattern backtracks over a run)."""

from __future__ import annotations

import re
from typing import Any


def repeats(pattern: re.Pattern[str]) -> list[tuple[str, int, int]]:
    """Every repeat in a compiled pattern's parse tree, as (kind, lower bound, upper bound)."""
    from re import _parser  # type: ignore[attr-defined]

    found: list[tuple[str, int, int]] = []

    def walk(items: Any) -> None:
        for op, arg in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                found.append((name, arg[0], arg[1]))
                walk(arg[2])
            elif name == "BRANCH":
                for branch in arg[1]:
                    walk(branch)
            elif name == "SUBPATTERN":
                walk(arg[-1])
            elif name == "ATOMIC_GROUP":
                walk(arg)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(arg[1])

    walk(_parser.parse(pattern.pattern, pattern.flags))
    return found


def backtracking_repeats(pattern: re.Pattern[str]) -> list[tuple[str, int, int]]:
    """The repeats that may give back more than one item: not possessive, and free to stop at
    more than two counts (``x?`` and ``x{4}`` are not; ``x*``, ``x+`` and ``x{0,7}`` are)."""
    return [
        (k, lo, hi) for k, lo, hi in repeats(pattern) if k != "POSSESSIVE_REPEAT" and hi - lo > 1
    ]
