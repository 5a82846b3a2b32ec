"""Many seams: a handoff every K agent turns over a whole session.

Stripping is idempotent, so the context after the seam at index ``s`` is the strip of the whole
history before ``s``, whatever seams came earlier. Each request (an agent message) is then sent
with the context of the last seam before it plus everything since: its tokens rise between
seams and drop at each one (the sawtooth), beside the tokens the same request costs without
handoffs. At each seam: the authored text kept so far (it only grows) and ipse's continuity of
the facts demanded after that seam: the share in context and the share of the others reachable.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from ipse.probe._facts import FactIndex
from ipse.probe._reach import Reach
from ipse.probe._score import probe
from ipse.probe._strategies import Meter, Plan
from ipse.probe._timeline import block_text, is_authored


def seams(
    index: FactIndex,
    meter: Meter,
    every: int,
    *,
    plan: Plan | None = None,
    reach: Reach | None = None,
) -> dict[str, Any]:
    """The every-``every``-turns document: seams, sawtooth, authored growth, continuity."""
    line = index.timeline
    turns = line.turns()
    valid = line.cuts()
    cuts: list[int] = []
    for number in range(every, len(turns), every):
        cut = max((c for c in valid if c <= turns[number]), default=0)
        if cut > (cuts[-1] if cuts else 0):
            cuts.append(cut)
    sizes = meter.messages()
    upto = [0, *accumulate(sizes)]  # upto[i]: tokens of messages [0, i)
    base: dict[int, int] = {0: 0}
    points: list[dict[str, Any]] = []
    authored = 0
    seen = 0
    for cut in cuts:
        result = probe(index, meter, cut, "seam", plan=plan, reach=reach)
        ipse = next(s for s in result["strategies"] if s["name"] == "ipse")
        base[cut] = ipse["tokens"]
        for message in line.messages[seen:cut]:
            authored += sum(len(block_text(b)) for b in message.blocks if is_authored(b))
        seen = cut
        points.append(
            {
                "cut": cut,
                "tokens_before": upto[cut],
                "tokens_after": ipse["tokens"],
                "authored_chars": authored,
                "demanded": result["demanded"]["total"],
                "in_context": ipse["in_context"],
                "reachable": ipse["reachable"],
                "lost": len(ipse["lost"]),
            }
        )
    requests = []
    starts = [0, *cuts]
    for turn in turns:
        seam = max(s for s in starts if s <= turn)
        requests.append(
            {
                "message": turn,
                "tokens": base[seam] + upto[turn] - upto[seam],
                "tokens_without_handoff": upto[turn],
            }
        )
    return {"every": every, "seams": points, "requests": requests}


__all__ = ["seams"]
