"""One line of history through the autopilot: its plan, its cuts, and each recorded request as
the proxy would have forwarded it.

`plan_autopilot` reads the line as its client would have sent it and says where it nudged and
where it cut (the same for every later request of the line, as on the wire). Each cut is the
handoff the proxy makes (`ipse.handoff.run`: strip, marker with the ledger, verified), made
once at the request where the autopilot cut; every later request sends those rewritten items,
byte for byte, then its own items from the cut on. A nudge is one user message after the last
message of the request that crossed the soft threshold, and stays where it was put until the
next cut. A request the autopilot leaves as it was (no cut and no nudge before it, and no
compaction prevented before it) keeps its record; every other request is sized from the one it
rewrites (`ipse.replay._sizes`) and goes to the price model without usage of its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ipse.errors import IpseError
from ipse.handoff._shared import (
    AutopilotPlan,
    AutopilotPolicy,
    Limits,
    PlannedEvent,
    autopilot_cut,
    item_starts,
    place_nudges,
    plan_autopilot,
)
from ipse.prefix import Request
from ipse.replay._lines import Line, Member
from ipse.replay._sizes import LineTokens, recorded_total
from ipse.transcript import Conversation
from ipse.transcript._shared import Codec


@dataclass(slots=True)
class Cut:
    """A cut the autopilot made: at the request ending at message ``request`` of the line, the
    history before message ``at`` (as the handoff settled it; item ``item``) rewritten into
    ``prefix``."""

    event: PlannedEvent
    at: int
    item: int
    prefix: list[Any]
    removed_calls: int
    made_at: int | None = None  # the index of the first recorded request it applies to
    continuity: dict[str, Any] | None = None


@dataclass(slots=True)
class PlannedLine:
    """A line, its conversation as the autopilot read it, its plan and the cuts made."""

    line: Line
    conversation: Conversation
    starts: list[int]  # the item each message starts at, then the number of items
    plan: AutopilotPlan
    limits: Limits
    cuts: list[Cut] = field(default_factory=list)
    nudges: list[PlannedEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    beyond: int = 0  # the tokens the plan's counts leave out (`ipse.replay._sizes`)
    hard: int | None = None  # the hard threshold, in the provider's tokens

    def message_of(self, item: int) -> int:
        """The message holding ``item``."""
        return max(0, bisect.bisect_right(self.starts, item) - 1)


def conversation_of(line: Line) -> tuple[Conversation, list[int]]:
    """The line's history as one conversation (its first stretch's front), and where each of
    its messages starts among the items."""
    codec = line.codec
    items = line.items()
    body = {**line.stretches[0].front, codec.history_key: items}
    conversation = codec.read_body(body)
    return conversation, item_starts(conversation, len(items))


def plan_line(
    line: Line, policy: AutopilotPolicy, limits: Limits, tokens: LineTokens
) -> PlannedLine:
    """The autopilot's plan for ``line``, counted as recorded (`LineTokens.count`), its cuts
    made (a cut the handoff refuses is left out, and said in the notes)."""
    conversation, starts = conversation_of(line)
    plan = plan_autopilot(conversation, policy, limits, count=tokens.count)
    planned = PlannedLine(line, conversation, starts, plan, limits)
    for event in plan.events:
        if event.action == "nudge":
            planned.nudges.append(event)
            continue
        made = _cut(planned, event)
        if made is not None:
            planned.cuts.append(made)
    return planned


def _cut(planned: PlannedLine, event: PlannedEvent) -> Cut | None:
    """The handoff the proxy makes at ``event`` (`ipse.handoff.wire.autopilot_cut`): the
    rewritten items before its cut."""
    session = f"replay:{planned.line.conversation or 'conversation'}"
    dialect = planned.line.codec.dialect
    try:
        made = autopilot_cut(planned.conversation, event, dialect, planned.starts, session=session)
    except IpseError as exc:
        planned.notes.append(f"no cut at message {event.at}: the handoff refused it ({exc})")
        return None
    return Cut(event, made.at, made.item, list(made.prefix), made.removed_calls)


def nudge_items(codec: Codec) -> list[Any]:
    """The nudge as the items the dialect sends: one user message of the harness."""
    return place_nudges([], 0, [0, 0], [0], codec.dialect)


@dataclass(slots=True)
class Rewriter:
    """Makes each member of a planned line into the request the proxy would have forwarded."""

    planned: PlannedLine
    tokens: LineTokens
    nudge: list[Any]
    offsets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.offsets = self.planned.line.offsets()

    def rewrite(self, stretch: int, member: Member) -> Request:
        """``member`` as forwarded: itself where the autopilot changed nothing before it."""
        planned = self.planned
        last = planned.line.end(stretch, member)
        end = planned.message_of(last)
        cut = next((c for c in reversed(planned.cuts) if c.event.request <= end), None)
        floor = cut.event.request if cut is not None else -1
        nudges = [e for e in planned.nudges if floor < e.request <= end]
        request = member.request
        if cut is None and not nudges and stretch == 0:
            return request
        items = self._items(stretch, member, cut, nudges)
        handoff = None
        if cut is not None and cut.made_at is None:
            cut.made_at = request.index
            handoff = {"anchor": f"autopilot:{cut.at}", "removed_calls": cut.removed_calls}
        body = {**self._front(member), planned.line.codec.history_key: items}
        return msgspec.structs.replace(
            request,
            body=body,
            usage=None,
            tokens=self._sized(request, stretch, last + 1, cut, len(nudges)),
            compaction=False,
            handoff=handoff,
        )

    def _items(
        self, stretch: int, member: Member, cut: Cut | None, nudges: Sequence[PlannedEvent]
    ) -> list[Any]:
        """The items the proxy forwards: the cut's rewritten items, the line's items from the
        cut to the member's stretch, the member's own items after its stretch's opening; each
        nudge after the message it follows."""
        own = member.items(self.planned.line.codec.history_key)
        offset = self.offsets[stretch]
        kept = self.planned.line.stretches[stretch].kept if stretch else 0
        start = cut.item if cut is not None else 0
        head = list(cut.prefix) if cut is not None else []
        middle = self.tokens.items[start:offset]
        items = head + middle + own[kept + max(0, start - offset) :]
        end = start + len(items) - len(head)  # (the line's item the items end at)
        placed = [e.request for e in nudges]
        dialect = self.planned.line.codec.dialect
        return place_nudges(items, end, self.planned.starts, placed, dialect)

    def _front(self, member: Member) -> dict[str, Any]:
        body = member.request.body
        key = self.planned.line.codec.history_key
        front = getattr(body, "front", None)
        if front is not None:
            return dict(front)
        return {k: v for k, v in body.items() if k != key}

    def _sized(
        self, request: Request, stretch: int, end: int, cut: Cut | None, nudges: int
    ) -> int | None:
        """The tokens of the forwarded request: its record, less what its items count as
        recorded, plus what the forwarded items count (`ipse.replay._sizes`)."""
        recorded = recorded_total(request.usage)
        if recorded is None:
            return None
        tokens = self.tokens
        if stretch == 0:
            as_recorded = tokens.base + tokens.between(0, end)
        else:
            offset = self.offsets[stretch]
            as_recorded = tokens.base + tokens.openings[stretch] + tokens.between(offset, end)
        start = cut.item if cut is not None else 0
        forwarded = tokens.base + tokens.between(start, end) + nudges * tokens.new(self.nudge)
        if cut is not None:
            forwarded += tokens.new(cut.prefix)
        return max(1, recorded - as_recorded + forwarded)
