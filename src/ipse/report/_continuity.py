"""What a handoff at a report's candidate checkpoint keeps of what the agent used next.

A checkpoint is a request (a new human turn); the probe works on the session's timeline
(`ipse.probe.timeline`). The request's newest human text is found in the timeline, in order,
and the cut falls right after that message (the handoff rewrites it and everything before),
moved back to the nearest cut that splits no tool exchange, as ``ipse probe --at N`` does. Each
checkpoint's numbers are `ipse.probe.continuity` at that cut, with the probe's scratch archive
and the session key it files the handoff under (so they are the ``ipse`` line of ``ipse probe
--at N``): the share of demanded facts ipse keeps in context, the share of the others reachable
by a recall query formed from its context, the context tokens it saves, and the first
`LOST_SHOWN` lost facts (redacted by the probe). Only the checkpoints the page lists are probed
(`SHOWN`), so the cost stays bounded on a long session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipse.errors import IpseError
from ipse.transcript import Message, Text

if TYPE_CHECKING:
    from ipse.probe._shared import FactIndex, Meter, Plan, Reach

SHOWN = 15  # checkpoints the page lists (the largest savings first)
LOST_SHOWN = 8  # lost facts carried per checkpoint (the count says how many in all)


def last_text(message: Message) -> str | None:
    texts = [b.text for b in message.blocks if isinstance(b, Text) and b.text.strip()]
    return texts[-1] if texts else None


def at_checkpoints(
    path: str, format: str | None, anchors: Sequence[tuple[int, Message]]
) -> Mapping[int, dict[str, Any]]:
    """Per request index: the continuity document of a handoff there. ``anchors`` are the
    checkpoint requests with their newest message; a request whose message the
    timeline does not hold (a sub-agent's) gets none."""
    from ipse.probe import timeline
    from ipse.probe._shared import FactIndex, Meter, Reach, plan_of, read_invariants
    from ipse.transcript import load

    if not anchors:
        return {}
    try:
        source = load(path, format)
        line = timeline(source)
    except IpseError:
        return {}
    index = FactIndex(line, read_invariants(Path(path)))
    meter = Meter(line)
    places: dict[str, list[int]] = {}
    for position, message in enumerate(line.messages):
        if message.role == "user":
            for block in message.blocks:
                if isinstance(block, Text) and block.text.strip():
                    places.setdefault(block.text, []).append(position)
    cuts: dict[int, int] = {}
    after = -1  # the same words may come again ("go on"): each anchor matches past the last
    for request, message in sorted(anchors, key=lambda a: a[0]):
        text = last_text(message)
        found = [p for p in places.get(text, []) if p > after] if text is not None else []
        if not found:
            continue
        after = found[0]
        cut = line.settle(found[0] + 1) if found[0] + 1 < len(line.messages) else 0
        if cut > 0:
            cuts[request] = cut
    with Reach() as reach:
        return _continuities(index, meter, cuts, reach, plan_of(source))


def _continuities(
    index: FactIndex, meter: Meter, cuts: Mapping[int, int], reach: Reach, plan: Plan
) -> dict[int, dict[str, Any]]:
    from ipse.probe._shared import continuity

    out: dict[int, dict[str, Any]] = {}
    for request, cut in cuts.items():
        result = continuity(index, meter, cut, reach, plan)
        if result is not None:
            out[request] = result.to_json(lost_limit=LOST_SHOWN)
    return out


__all__ = ["LOST_SHOWN", "SHOWN", "at_checkpoints", "last_text"]
