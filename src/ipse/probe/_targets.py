"""What a probe run adds up to: the headline per strategy, and the targets at compaction points.

The headline is micro-averaged over facts: a strategy's *in context* is every demanded fact it
holds at every cut it was scored at, over every fact demanded there (a cut with 40 demanded
facts weighs four times one with 10); *reachable* is likewise the facts its queries reach over
the facts not in its context. The two are never added.

At each point where the agent CLI compacted, three targets are checked against its summary:

- ``ipse``: ipse's handoff holds at least the summary's share of the demanded facts in context;
- ``ipse-budget``: so does the handoff held to the summary's own tokens, at no more tokens;
- ``reachable``: of the demanded facts not in their context, both reach at least
  `REACH_TARGET` percent by queries formed from it.

Where one is missed, ``short`` names what is behind it and why (`ipse.probe._lost.why`): the
facts the summary holds that a handoff holding a smaller share does not, the tokens a held
handoff could not page out, and the facts no query reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ipse.probe._facts import SessionFact
from ipse.probe._lost import fact_document, share, why
from ipse.probe._strategies import BUDGETED, SUMMARY, Context

REACH_TARGET = 80.0
SHORT_SHOWN = 12  # facts a target's shortfall lists (it counts them all)


def headline(probes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per strategy, in the order first scored: the cuts, the demanded facts summed over
    them, the shares in context and reachable (micro-averaged), and the mean tokens."""
    rows: dict[str, dict[str, Any]] = {}
    for probe in probes:
        for line in probe["strategies"]:
            if line.get("note", "").startswith("the handoff refused"):
                continue
            row = rows.setdefault(
                line["name"],
                {
                    "name": line["name"],
                    "cuts": 0,
                    "demanded": 0,
                    "held": 0,
                    "missing": 0,
                    "reached": None,
                    "tokens": 0,
                },
            )
            row["cuts"] += 1
            row["demanded"] += line["held"] + line["missing"]
            row["held"] += line["held"]
            row["tokens"] += line["tokens"]
            if line["reached"] is not None:
                row["reached"] = (row["reached"] or 0) + line["reached"]
                row.setdefault("searched", 0)
                row["searched"] += line["missing"]
    out = []
    for row in rows.values():
        row["missing"] = row["demanded"] - row["held"]
        searched = row.pop("searched", None)
        out.append(
            {
                **row,
                "in_context": share(row["held"], row["demanded"]),
                "reachable": share(row["reached"], searched) if searched is not None else None,
                "tokens": round(row["tokens"] / row["cuts"]),
            }
        )
    return out


def targets(
    built: Sequence[Context], lines: Sequence[Mapping[str, Any]], demand: Sequence[SessionFact]
) -> dict[str, Any] | None:
    """The targets at a compaction point (None where the cut has no summary or ipse refused)."""
    scored = {line["name"]: line for line in lines}
    texts = {c.name: c.text for c in built}
    if SUMMARY not in scored or "ipse" not in scored or "note" in scored["ipse"]:
        return None
    summary, ipse = scored[SUMMARY], scored["ipse"]
    budget = scored.get(BUDGETED, ipse)
    fewer = {
        "ipse": not _at_least(ipse["in_context"], summary["in_context"]),
        "ipse-budget": not _at_least(budget["in_context"], summary["in_context"]),
    }
    over = budget["tokens"] > summary["tokens"]
    met = {
        "ipse": not fewer["ipse"],
        "ipse-budget": not fewer["ipse-budget"] and not over,
        "reachable": all(
            s["reachable"] is None or s["reachable"] >= REACH_TARGET for s in (ipse, budget)
        ),
    }
    short = _over(budget, summary) if over else []
    short += _short(texts, demand, fewer, budget["name"]) + _unreached(met, ipse, budget)
    return {
        "summary": _numbers(summary),
        "ipse": _numbers(ipse),
        "ipse-budget": _numbers(budget),
        "reach_target": REACH_TARGET,
        "met": met,
        "short_total": len(short),
        "short": short[:SHORT_SHOWN],
    }


def _at_least(share: float | None, other: float | None) -> bool:
    return (share or 0.0) >= (other or 0.0)


def _numbers(line: Mapping[str, Any]) -> dict[str, Any]:
    return {k: line[k] for k in ("name", "tokens", "in_context", "reachable", "held", "missing")}


def _over(budget: Mapping[str, Any], summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Why the held handoff is larger than the summary."""
    why = (
        "what a budget never pages out (the human's words, the checkpoint notes, the marker's "
        "own lines and the ledger's heading, once every narration is paged out and the ledger "
        "holds no entry) is more than the summary's tokens"
    )
    value = f"{budget['tokens']:,} against the summary's {summary['tokens']:,}"
    return [
        {"target": "ipse-budget", "kind": "tokens", "sub": "tokens", "value": value, "why": why}
    ]


def _short(
    texts: Mapping[str, str],
    demand: Sequence[SessionFact],
    fewer: Mapping[str, bool],
    budget: str,
) -> list[dict[str, Any]]:
    """The facts the summary holds that a handoff holding a smaller share does not."""
    out: list[dict[str, Any]] = []
    for name in ("ipse", "ipse-budget"):
        if not fewer[name]:
            continue
        strategy = "ipse" if name == "ipse" else budget
        for fact in demand:
            if fact.value in texts[SUMMARY] and fact.value not in texts[strategy]:
                doc = fact_document(fact, _why_short(strategy, fact))
                out.append({"target": name, **doc})
    return out


def _why_short(strategy: str, fact: SessionFact) -> str:
    """Why the handoff lacks a fact the summary holds (the part of `why` about the context)."""
    return why(strategy, fact, False, False)


def _unreached(met: Mapping[str, bool], *lines: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The lost facts (not in context, not reached) of the handoffs, when reach missed."""
    if met["reachable"]:
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in lines:
        if line["name"] in seen:
            continue
        seen.add(line["name"])
        out.extend({"target": "reachable", "strategy": line["name"], **f} for f in line["lost"])
    return out


__all__ = ["REACH_TARGET", "SHORT_SHOWN", "headline", "targets"]
