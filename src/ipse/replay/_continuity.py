"""What each cut keeps of what the agent used next, and what the agent CLI's own summary kept,
as `ipse probe` measures them.

At a cut, the probe scores ipse's handoff on the line's history (`ipse.probe.continuity`: the
share of the facts the agent cited after the cut that the handoff keeps in context, and the
share reachable from its archive); the replay takes whatever it reports. Where the session
compacted, the probe's line for the agent CLI's compaction summary at that point is the bar a
cut is held to (`ipse.probe.probe` at the compaction, its ``compaction-summary`` strategy),
with ipse's own line at the same point beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipse.errors import IpseError
from ipse.replay._rewrite import PlannedLine

SUMMARY = "compaction-summary"  # the probe's name for the agent CLI's summary
IPSE = "ipse"  # ... and for ipse's handoff


def at_cuts(planned: PlannedLine, session: Path | None) -> None:
    """Fill each cut's ``continuity`` with the probe's document for it (None where the probe
    cannot score the cut)."""
    if not planned.cuts:
        return
    from ipse.probe._shared import FactIndex, Meter, Reach, Timeline, continuity, read_invariants

    conversation = planned.conversation
    line = Timeline(conversation.messages, (), conversation.dialect, conversation.system)
    index = FactIndex(line, read_invariants(session) if session is not None else ())
    meter = Meter(line)
    with Reach() as reach:
        for cut in planned.cuts:
            found = continuity(index, meter, cut.at, reach)
            cut.continuity = found.to_json(lost_limit=0) if found is not None else None


def at_compactions(session: Path, format: str | None) -> list[dict[str, Any]]:
    """At each of the session's own compactions: the probe's in-context and reachable shares
    for the agent CLI's summary and for ipse's handoff at the same point (none for an input
    that is no session with compactions)."""
    from ipse.probe import probe, timeline
    from ipse.probe._shared import FactIndex, Meter, Reach, read_invariants
    from ipse.transcript import load

    try:
        line = timeline(load(session, format))
    except IpseError:
        return []
    if not line.compactions:
        return []
    index = FactIndex(line, read_invariants(session))
    meter = Meter(line)
    out = []
    with Reach() as reach:
        documents = [
            probe(index, meter, c.index, "compaction", reach=reach) for c in line.compactions
        ]
    for compaction, document in zip(line.compactions, documents, strict=True):
        strategies = {s["name"]: s for s in document["strategies"]}
        out.append(
            {
                "message": compaction.index,
                "demanded": document["demanded"]["total"],
                "summary": _shares(strategies.get(SUMMARY)),
                "ipse": _shares(strategies.get(IPSE)),
            }
        )
    return out


def _shares(line: dict[str, Any] | None) -> dict[str, Any] | None:
    if line is None:
        return None
    return {
        "tokens": line["tokens"],
        "in_context": line["in_context"],
        "reachable": line["reachable"],
    }


def holds_to_summary(
    cuts: Sequence[dict[str, Any]], compactions: Sequence[dict[str, Any]]
) -> bool | None:
    """Whether every cut keeps in context at least what the agent CLI's summary kept (the
    lowest of its compactions'); None where there is no summary or no cut to compare."""
    bars = [c["summary"]["in_context"] for c in compactions if c.get("summary")]
    floor = [float(b) for b in bars if b is not None]
    found = [c["continuity"]["in_context"] for c in cuts if c.get("continuity")]
    scored = [float(s) for s in found if s is not None]
    if not floor or not scored:
        return None
    return min(scored) >= min(floor)
