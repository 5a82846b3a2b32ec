"""Continuity of a handoff at one cut, cheaply, and the best cut of a conversation.

`continuity` scores only what a micro-handoff at a cut does (ipse's context against the whole
history): the share of demanded facts it keeps in context and the share of the others reachable
by a recall query formed from it (`ipse.probe._reach`), the tokens it saves, and the lost
facts. Its numbers are the ``ipse`` line of `probe` at the same cut (the same facts, demand and
scoring), without the other strategies' contexts, so a report can show it at every candidate
checkpoint of a long session.

`best_cut` picks where a handoff pays most, among the turn boundaries (the cuts right before
an agent message that split no tool exchange):

    value(c) = saved(c) * later(c) * continuity(c)
    continuity(c) = (in_context(c) + REACH_WEIGHT * reached(c)) / demanded(c)   (1 if none)

``saved`` is the history tokens the handoff removes (whole history minus ipse's context),
``later`` the agent turns sent after the cut (each carries the saving), so ``saved * later`` is
the history tokens the rest of the session does not send again; ``continuity`` discounts it by
the demanded facts the handoff does not keep in context, a reachable one counting half. Ties go
to the earlier cut. The two plain ratios
degenerate: demanded facts per token of context favours the first cut (a few standing rules in
a few tokens), and the share kept is perfect at the last cut (only standing facts are demanded
after it, and ipse keeps every authored word); weighting by the turns that follow is what makes
the choice a trade-off. At most `MAX_CANDIDATES` cuts are scored, evenly spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import CutError
from ipse.probe._demand import demanded
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._reach import Reach
from ipse.probe._score import score
from ipse.probe._strategies import Meter, Plan, handoff, ipse_contexts
from ipse.probe._timeline import Timeline
from ipse.transcript import Conversation

REACH_WEIGHT = 0.5  # a reachable fact counts half: the agent must know to ask for it
LOST_SHOWN = 8  # lost facts a document lists (it counts them all)
RULE = (
    f"max saved tokens x later agent turns x (in context + {REACH_WEIGHT} x reachable) / "
    "demanded; ties: the earlier cut"
)
MAX_CANDIDATES = 64  # cuts scored by `best_cut` (evenly spread when there are more)


@dataclass(frozen=True, slots=True)
class Continuity:
    """What a handoff at ``cut`` keeps of the facts the agent used next, and what it saves."""

    cut: int
    demanded: int
    in_context: float | None  # percent of demanded facts, None when nothing was demanded
    reachable: float | None  # percent of the others, None when all are in context
    kept: int  # demanded facts in context
    reached: int  # demanded facts not in context that a query formed from it reaches
    tokens_before: int  # the whole history before the cut
    tokens_after: int  # ipse's context after it
    later_turns: int  # agent turns at or after the cut
    lost: tuple[dict[str, Any], ...]  # the lost facts (values redacted), all of them

    @property
    def saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    @property
    def share(self) -> float:
        """(in context + REACH_WEIGHT * reached) / demanded; 1.0 when nothing was demanded."""
        if not self.demanded:
            return 1.0
        return (self.kept + REACH_WEIGHT * self.reached) / self.demanded

    @property
    def value(self) -> float:
        return self.saved * self.later_turns * self.share

    def to_json(self, lost_limit: int | None = None) -> dict[str, Any]:
        lost = list(self.lost if lost_limit is None else self.lost[:lost_limit])
        return {
            "cut": self.cut,
            "demanded": self.demanded,
            "in_context": self.in_context,
            "reachable": self.reachable,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved_tokens": self.saved,
            "later_turns": self.later_turns,
            "lost_total": len(self.lost),
            "lost": lost,
        }


def continuity(
    index: FactIndex, meter: Meter, cut: int, reach: Reach | None = None, plan: Plan | None = None
) -> Continuity | None:
    """ipse's continuity at ``cut`` (a valid cut); None where the handoff refuses the cut.
    Without ``reach`` nothing is reachable."""
    facts = index.facts(cut)
    demand = demanded(index, facts, cut)
    context = ipse_contexts(meter, handoff(meter, cut, (plan or Plan()).session))[0]
    if context.note:
        return None
    line = score(context, demand, reach)
    messages = index.timeline.messages
    return Continuity(
        cut=cut,
        demanded=len(demand),
        in_context=line["in_context"],
        reachable=line["reachable"],
        kept=line["held"],
        reached=line["reached"] or 0,
        tokens_before=sum(meter.messages()[:cut]),
        tokens_after=context.tokens,
        later_turns=sum(1 for m in messages[cut:] if m.role == "assistant"),
        lost=tuple(line["lost"]),
    )


def turn_boundaries(index: FactIndex) -> list[int]:
    """The cuts before an agent turn that split no tool exchange (each is where a request
    could go out with a handed-off history)."""
    line = index.timeline
    return [c for c in line.cuts() if line.messages[c].role == "assistant"]


def candidates(index: FactIndex, limit: int = MAX_CANDIDATES) -> list[int]:
    """The turn boundaries `best_cut` scores: all of them, or ``limit`` evenly spread."""
    found = turn_boundaries(index)
    if len(found) <= limit:
        return found
    step = (len(found) - 1) / (limit - 1)
    return sorted({found[round(i * step)] for i in range(limit)})


def best_cut(
    index: FactIndex, meter: Meter, plan: Plan | None = None
) -> tuple[Continuity, list[Continuity]] | None:
    """The cut of highest `Continuity.value` among `candidates` (ties: the earlier), with every
    candidate scored; None where no candidate saves a token."""
    with Reach() as reach:
        scored = [
            c
            for cut in candidates(index)
            if (c := continuity(index, meter, cut, reach, plan)) is not None
        ]
    useful = [c for c in scored if c.saved > 0 and c.later_turns > 0]
    if not useful:
        return None
    best = max(useful, key=lambda c: (c.value, -c.cut))
    return best, scored


def best_of(
    conversation: Conversation, session: Path | None = None, plan: Plan | None = None
) -> dict[str, Any]:
    """`best_cut` of one conversation (the one a handoff rewrites), as a JSON-ready document:
    the chosen cut, why, and the rule; raises `CutError` where no cut saves a token. ``plan``
    names the session key the handoff files under (its marker says it)."""
    line = Timeline(conversation.messages, (), conversation.dialect, conversation.system)
    index = FactIndex(line, read_invariants(session) if session else ())
    found = best_cut(index, Meter(line), plan)
    if found is None:
        raise CutError("no cut of this conversation saves a token with a handoff after it")
    best, scored = found
    return {
        "cut": best.cut,
        "rule": RULE,
        "reach_weight": REACH_WEIGHT,
        "candidates": len(scored),
        "value": round(best.value),
        "continuity": best.to_json(lost_limit=LOST_SHOWN),
    }


__all__ = [
    "LOST_SHOWN",
    "MAX_CANDIDATES",
    "REACH_WEIGHT",
    "Continuity",
    "best_cut",
    "best_of",
    "candidates",
    "continuity",
    "turn_boundaries",
]
