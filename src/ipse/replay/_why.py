"""Why a session's conversation did not come to half its recorded cost with the policy, in
numbers taken from the replay itself.

Three things bound what a cut can save, each measured on the session:

- **too short**: a cut saves only on the requests after it; the share of the recorded
  conversation cost spent before the autopilot's first cut of each conversation (all of it
  where a conversation was never cut) cannot be saved;
- **mostly uncached**: a cut makes the history smaller, so what it saves is mostly reads of
  old history; the share of the recorded conversation cost paid for cache writes and uncached
  input (each new token is written once, whatever the context's size) mostly stays;
- **mostly authored text**: a cut keeps every word the human and the agent wrote; the share
  of the context the cuts kept (their size after over their size before) is not removed.

A reason is given where its share is at least `SHARE` (and the policy cut at all); where none
reaches it, the largest is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse.prefix import PrefixReport, token_cost
from ipse.prefix._shared import Tokens
from ipse.replay._rewrite import Cut

SHARE = 0.5  # the share from which a bound explains a session that misses half its cost


def conversation_split(report: PrefixReport) -> tuple[float, float]:
    """The recorded conversation cost (above the front) paid for reads, and for writes and
    uncached input."""
    reads = rest = 0.0
    for row in report.rows:
        charged = row.charged
        front = min(row.front, charged.total)
        read = max(0, charged.cache_read - front)
        front_left = max(0, front - charged.cache_read)
        write = max(0, charged.cache_write - front_left)
        uncached = max(0, charged.total - front - read - write)
        reads += token_cost(report.provider, row.model, Tokens(read, 0, 0), row.ttl)
        rest += token_cost(report.provider, row.model, Tokens(0, write, uncached), row.ttl)
    return reads, rest


def before_cuts(
    report: PrefixReport, first_cut: Mapping[str | None, int], front: Mapping[int, float]
) -> tuple[float, float]:
    """The recorded conversation cost spent before each conversation's first cut (all of it
    where none was cut), and the whole recorded conversation cost."""
    before = whole = 0.0
    for row in report.rows:
        cost = row.cost_usd - front.get(row.index, 0.0)
        whole += cost
        cut = first_cut.get(row.conversation)
        if cut is None or row.index < cut:
            before += cost
    return before, whole


def kept_share(cuts: Sequence[Cut]) -> float | None:
    """The context the cuts kept: their sizes after over their sizes before (None: no cut)."""
    before = sum(c.event.step.tokens for c in cuts)
    after = sum(c.event.step.tokens_after or 0 for c in cuts)
    return after / before if before else None


def reasons(
    ratio: float | None,
    mode: str,
    early: float,
    uncached: float,
    kept: float | None,
) -> list[dict[str, Any]]:
    """The reasons a conversation ratio above `SHARE` has (none at or below it): each with
    its share and a sentence."""
    if ratio is None or ratio <= SHARE:
        return []
    if mode != "cut":
        return [
            {
                "reason": "no cuts",
                "share": 1.0,
                "detail": f"the policy is {mode}: nothing is cut, and a nudge the recorded "
                "agent never saw is never answered",
            }
        ]
    found: list[dict[str, Any]] = [
        {
            "reason": "too short",
            "share": round(early, 4),
            "detail": f"{early:.0%} of the recorded conversation cost came before the "
            "autopilot's first cut (the requests stayed below the sizes it cuts at until then)",
        },
        {
            "reason": "mostly uncached",
            "share": round(uncached, 4),
            "detail": f"{uncached:.0%} of the recorded conversation cost is cache writes and "
            "uncached input: each new token is written once whatever the context's size",
        },
    ]
    if kept is not None:
        found.append(
            {
                "reason": "mostly authored text",
                "share": round(kept, 4),
                "detail": f"the cuts kept {kept:.0%} of the context: the words the human and "
                "the agent wrote, which a handoff never removes",
            }
        )
    over = [r for r in found if r["share"] >= SHARE]
    return over or [max(found, key=lambda r: r["share"])]
