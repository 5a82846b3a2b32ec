"""A lost fact: its document (the value redacted) and why a strategy lost it.

A fact is lost by a strategy when it is neither in its context nor reached by a query formed
from it. `why` says both halves: why the context lacks it (for ipse's handoff, by where the fact
lived before the cut: only in a tool's output, in a call the ledger does not show, in the
agent's narration a budget paged out, in thinking) and why no query reached it (the strategy
has no archive, no archived item holds the value as written, or no query returned that item
among its top five).
"""

from __future__ import annotations

from typing import Any

from ipse._redact import redact
from ipse.probe._facts import SessionFact
from ipse.probe._strategies import BUDGETED, SUMMARY

IPSE = ("ipse", "ipse-no-notes", BUDGETED)  # the strategies that are ipse's handoff


def share(part: int, whole: int) -> float | None:
    """``part / whole`` as a percentage with one decimal, None when the whole is 0."""
    return round(100.0 * part / whole, 1) if whole else None


def fact_document(fact: SessionFact, why: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": fact.kind,
        "sub": fact.sub,
        "value": redact(fact.value),
        "where": list(fact.where),
        "first": fact.first,
    }
    if fact.status is not None:
        out["status"] = fact.status
    if why:
        out["why"] = why
    return out


def why(name: str, fact: SessionFact, searched: bool, held: bool) -> str:
    """Why strategy ``name`` lost ``fact``: why it is not in the context, and why no query
    reached it (``searched``: the strategy has an archive; ``held``: an item of it holds it)."""
    if name in IPSE:
        gone = _why_ipse(name, fact)
    elif name == SUMMARY:
        gone = "not in the summary"
    else:
        gone = "not in this context"
    if not searched:
        return gone + ("; the summary names no transcript to search" if name == SUMMARY else "")
    if not held:
        return gone + "; no archived item holds it as written"
    return gone + "; no query formed from the context returns the item holding it in its top 5"


def _why_ipse(name: str, fact: SessionFact) -> str:
    where = set(fact.where)
    if name == BUDGETED and "agent" in where:
        return "in the agent's narration, paged out by the budget"
    if where <= {"tool_result"}:
        return "only in a tool's output, which the handoff removes (the ledger names calls)"
    if where <= {"tool_input", "tool_result"} and name == BUDGETED:
        return "in a removed call the ledger does not show (past the cap the budget left it)"
    if where <= {"tool_input", "tool_result"}:
        return "in a removed call the ledger does not show (past its cap, or not a file or command)"
    if where <= {"thinking", "tool_input", "tool_result"}:
        return "in the agent's thinking and tool traffic, which the handoff removes"
    return f"in {', '.join(fact.where)}, not kept as written"


__all__ = ["IPSE", "fact_document", "share", "why"]
