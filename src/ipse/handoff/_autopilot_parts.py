"""The two writes the autopilot makes into a request's history, for the proxy and the replay.

`autopilot_cut` makes the cut a plan says (`ipse.handoff.plan_autopilot`): the handoff (`run`:
strip, the marker with the ledger as notes, verified; what it removed archived) on the history up
to the request where the autopilot cut, so every later request of the conversation gets the same
bytes. `place_nudges` puts each nudge, one user message of the harness, after the message it
follows, counted from the end of the history (the items after it are the client's own), so it
stays where it was put until the next cut. `could_act` says whether a body's size can reach the
soft threshold at all (its bytes over `bytes_per_token`, an upper bound of what a plan counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ipse.handoff._autopilot import AutopilotPolicy, Limits, RequestState, thresholds
from ipse.handoff._autopilot_plan import NUDGE, PlannedEvent, bytes_per_token
from ipse.handoff._run import HandoffOptions, run
from ipse.transcript import Conversation, Message, Text
from ipse.transcript._shared import Origin, codec

if TYPE_CHECKING:
    from ipse.archive._shared import ArchiveSink


@dataclass(frozen=True, slots=True)
class AutopilotCut:
    """A cut the autopilot made: at ``event``, the history before message ``at`` (as the
    handoff settled it; raw item ``item``) rewritten into ``prefix``."""

    event: PlannedEvent
    at: int
    item: int
    prefix: tuple[Any, ...]
    removed_calls: int
    archived: int = 0
    session: str | None = None
    tokens_after: int | None = None  # the request it was made at, as sent (the plan's count)


def item_starts(conversation: Conversation, items: int) -> list[int]:
    """The raw item each message starts at, then ``items``: counted back from the end, as the
    items before the first message are the ones its front was read from (Chat Completions'
    leading system messages); one item per message where the counts do not add up."""
    counts = []
    for message in conversation.messages:
        spans = message.meta.get("items") if message.meta else None
        counts.append(len(spans) if spans else 1)
    front = items - sum(counts)
    if front < 0:
        return list(range(len(conversation.messages) + 1))
    starts = [front]
    for count in counts:
        starts.append(starts[-1] + count)
    return starts


def autopilot_cut(
    conversation: Conversation,
    event: PlannedEvent,
    dialect: str,
    starts: Sequence[int],
    *,
    session: str,
    archive: ArchiveSink | None = None,
    source: str = "proxy",
) -> AutopilotCut:
    """The handoff at the cut ``event`` plans: made on the history up to the request where the
    autopilot cut (so later requests get the same bytes), what it removed given to
    ``archive``. Raises `IpseError` where the handoff refuses."""
    upto = replace(conversation, messages=conversation.messages[: event.request + 1])
    handoff = run(
        upto,
        HandoffOptions(at=event.at),
        session=session,
        archive=archive,
        source=source,
        recallable=True,
    )
    report = handoff.report
    # the body's history as the handoff writes it (its front's items too: Chat Completions'
    # system messages), less the items of the messages it kept from the cut on
    written = codec(dialect).write_body(handoff.after)[codec(dialect).history_key]
    kept = starts[event.request + 1] - starts[report.cut]
    prefix = written[: len(written) - kept]
    removed = report.removed_calls  # (tool calls: not thinking, not paged narration)
    return AutopilotCut(
        event,
        report.cut,
        starts[report.cut],
        tuple(prefix),
        removed,
        handoff.archived,
        handoff.session,
    )


def write_items(dialect_codec: Any, messages: Sequence[Message]) -> list[Any]:
    """Messages as the items the dialect sends."""
    out: list[Any] = []
    for message in messages:
        written = dialect_codec.write_message(message)
        if isinstance(written, list):
            out.extend(written)
        else:
            out.append(written)
    return out


def nudge_items(dialect: str) -> list[Any]:
    """The nudge as the items the dialect sends: one user message of the harness."""
    return write_items(codec(dialect), [Message("user", (Text(NUDGE, Origin.HARNESS),))])


def place_nudges(
    items: Sequence[Any], end: int, starts: Sequence[int], nudges: Sequence[int], dialect: str
) -> list[Any]:
    """``items`` with a nudge after each message of ``nudges``: ``items`` end where the raw
    history's item ``end`` does (the items after a nudge are the client's own, so its place is
    counted from the end)."""
    return insert_nudges(items, end, [starts[m + 1] for m in sorted(nudges)], dialect)


def insert_nudges(items: Sequence[Any], end: int, after: Sequence[int], dialect: str) -> list[Any]:
    """``items`` with a nudge before each raw item of ``after`` (ascending; see
    `place_nudges`)."""
    out = list(items)
    if not after:
        return out
    nudge = nudge_items(dialect)
    for item in after:  # (from the first: a later place, counted from the end, stays)
        at = len(out) - (end - item)
        out[at:at] = nudge
    return out


def could_act(size: int, policy: AutopilotPolicy, limits: Limits) -> bool:
    """Whether a body of ``size`` bytes may reach the soft threshold: the plan counts each
    part's bytes over `bytes_per_token`, so a body whose whole size does not reach it was never
    nudged nor cut (nor was any earlier request of its conversation, a prefix of it)."""
    if policy.mode == "off":
        return False
    lowest = thresholds(RequestState(0, None, limits), policy).soft
    return size / bytes_per_token() >= lowest


__all__ = [
    "AutopilotCut",
    "autopilot_cut",
    "could_act",
    "insert_nudges",
    "item_starts",
    "nudge_items",
    "place_nudges",
    "write_items",
]
