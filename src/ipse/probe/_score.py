"""Scoring: per strategy and per fact kind, how many demanded facts each context holds, and how
many of the others a recall query formed from it reaches.

A demanded fact is *in context* when its value stands, as written, in the strategy's context;
*reachable* when it is not, but a query formed from the context finds the archived item that
holds it (`ipse.probe._reach`); otherwise *lost*, with the reason (`why`). The two shares are
never added: ``in_context`` is of the demanded facts, ``reachable`` of those not in context.
`probe` runs one cut and returns its JSON-ready document, with the lost facts themselves
(values redacted as everywhere in ipse).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ipse._redact import redact
from ipse.probe._demand import demanded, rediscovery
from ipse.probe._facts import KINDS, FactIndex, SessionFact
from ipse.probe._lost import fact_document, share, why
from ipse.probe._model import Asking, answers
from ipse.probe._questions import questions
from ipse.probe._reach import Reach, Reached, item_text
from ipse.probe._strategies import Context, Meter, Plan, contexts
from ipse.probe._targets import targets

Keep = Callable[[int, Sequence[Context]], None]  # what is told each cut's contexts


def score(
    context: Context, demand: Sequence[SessionFact], reach: Reach | None = None
) -> dict[str, Any]:
    """One strategy's line: tokens, the share of demanded facts in context, the share of the
    others reachable (None without an archive or a ``reach``), by kind, and the lost facts."""
    held = [f for f in demand if f.value in context.text]
    missing = [f for f in demand if f.value not in context.text]
    found = _reached(context, missing, reach)
    reached = [] if found is None else list(found.facts)
    out: dict[str, Any] = {
        "name": context.name,
        "tokens": context.tokens,
        "in_context": share(len(held), len(demand)),
        "reachable": None if found is None else share(len(reached), len(missing)),
        "held": len(held),
        "missing": len(missing),
        "reached": None if found is None else len(reached),
        "queries": None if found is None else found.queries,
        "by_kind": _by_kind(demand, held, reached),
        "lost": _lost(context, missing, reached, searched=found is not None),
    }
    if context.note:
        out["note"] = context.note
    return out


def _reached(
    context: Context, missing: Sequence[SessionFact], reach: Reach | None
) -> Reached | None:
    """What the context's queries reach of ``missing``; None where it has no archive."""
    if reach is None or context.items is None:
        return None
    return reach.measure(context.text, context.items, missing)


def _lost(
    context: Context,
    missing: Sequence[SessionFact],
    reached: Sequence[SessionFact],
    *,
    searched: bool,
) -> list[dict[str, Any]]:
    """The documents of the missing facts not reached, each with why."""
    keys = {f.key for f in reached}
    unreached = [f for f in missing if f.key not in keys]
    texts = [item_text(i) for i in context.items or ()] if searched and unreached else []
    return [
        fact_document(f, why(context.name, f, searched, any(f.value in t for t in texts)))
        for f in unreached
    ]


def _by_kind(
    demand: Sequence[SessionFact], held: Sequence[SessionFact], reached: Sequence[SessionFact]
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        n = sum(1 for f in demand if f.kind == kind)
        if n:
            out[kind] = {
                "demanded": n,
                "in_context": sum(1 for f in held if f.kind == kind),
                "reachable": sum(1 for f in reached if f.kind == kind),
            }
    return out


def probe(
    index: FactIndex,
    meter: Meter,
    cut: int,
    kind: str,
    asking: Asking | None = None,
    *,
    plan: Plan | None = None,
    reach: Reach | None = None,
    keep: Keep | None = None,
) -> dict[str, Any]:
    """The probe of one cut: facts, demand, re-discovery, and every strategy's score; with
    ``asking``, every strategy's answers to the questions the demand gives; ``keep`` is told
    the contexts (``--contexts``)."""
    facts = index.facts(cut)
    demand = demanded(index, facts, cut)
    again = rediscovery(index.timeline.messages, cut)
    built = contexts(meter, cut, plan)
    if keep is not None:
        keep(cut, built)
    strategies = [score(c, demand, reach) for c in built]
    if asking is not None:
        asked = questions(index.timeline, demand, asking.recall_questions)
        for line, context in zip(strategies, built, strict=True):
            if context.text or context.tokens:
                line["model"] = answers(asking, context, asked)
    out: dict[str, Any] = {
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
    point = targets(built, strategies, demand)
    if point is not None:
        out["targets"] = point
    return out


__all__ = ["Keep", "fact_document", "probe", "score", "share"]
