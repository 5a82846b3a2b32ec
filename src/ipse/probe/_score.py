"""Scoring: per strategy and per fact kind, how many demanded facts each context holds.

A demanded fact is *in context* when its value stands, as written, in the strategy's context;
*recallable* when it is not but stands in what the strategy can bring back (ipse's archive of
what it removed); otherwise *lost*. `probe` runs one cut and returns its JSON-ready document,
with the lost facts themselves (values redacted as everywhere in ipse).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ipse.probe._demand import demanded, rediscovery
from ipse.probe._facts import KINDS, FactIndex, SessionFact
from ipse.probe._model import Asking, answers
from ipse.probe._questions import questions
from ipse.probe._strategies import Context, Meter, contexts
from ipse.redact import redact


def share(part: int, whole: int) -> float | None:
    """``part / whole`` as a percentage with one decimal, None when nothing was demanded."""
    return round(100.0 * part / whole, 1) if whole else None


def fact_document(fact: SessionFact) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": fact.kind,
        "sub": fact.sub,
        "value": redact(fact.value),
        "where": list(fact.where),
        "first": fact.first,
    }
    if fact.status is not None:
        out["status"] = fact.status
    return out


def score(context: Context, demand: list[SessionFact]) -> dict[str, Any]:
    """One strategy's line: tokens, shares of demanded facts in context and recallable, by kind,
    and the lost facts."""
    held: list[SessionFact] = []
    recalled: list[SessionFact] = []
    lost: list[SessionFact] = []
    for fact in demand:
        if fact.value in context.text:
            held.append(fact)
        elif context.recall and fact.value in context.recall:
            recalled.append(fact)
        else:
            lost.append(fact)
    by_kind: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        n = sum(1 for f in demand if f.kind == kind)
        if n:
            by_kind[kind] = {
                "demanded": n,
                "in_context": sum(1 for f in held if f.kind == kind),
                "recallable": sum(1 for f in recalled if f.kind == kind),
            }
    out: dict[str, Any] = {
        "name": context.name,
        "tokens": context.tokens,
        "in_context": share(len(held), len(demand)),
        "recallable": share(len(recalled), len(demand)),
        "kept_or_recallable": share(len(held) + len(recalled), len(demand)),
        "by_kind": by_kind,
        "lost": [fact_document(f) for f in lost],
    }
    if context.note:
        out["note"] = context.note
    return out


def probe(
    index: FactIndex, meter: Meter, cut: int, kind: str, asking: Asking | None = None
) -> dict[str, Any]:
    """The probe of one cut: facts, demand, re-discovery, and every strategy's score; with
    ``asking``, every strategy's answers to the questions the demand gives."""
    facts = index.facts(cut)
    demand = demanded(index, facts, cut)
    again = rediscovery(index.timeline.messages, cut)
    built = contexts(meter, cut)
    strategies = [score(c, demand) for c in built]
    if asking is not None:
        asked = questions(index.timeline, demand, asking.recall_questions)
        for line, context in zip(strategies, built, strict=True):
            if context.text or context.tokens:
                line["model"] = answers(asking, context, asked)
    return {
        "cut": cut,
        "kind": kind,
        "messages_after": len(index.timeline.messages) - cut,
        "facts": {"total": len(facts), "by_kind": dict(Counter(f.kind for f in facts))},
        "demanded": {
            "total": len(demand),
            "by_kind": dict(Counter(f.kind for f in demand)),
            "standing": sum(1 for f in demand if f.standing),
        },
        "rediscovery": {
            "files": again.files,
            "commands": again.commands,
            "examples": [redact(e) for e in again.examples],
        },
        "strategies": strategies,
    }


__all__ = ["fact_document", "probe", "score", "share"]
