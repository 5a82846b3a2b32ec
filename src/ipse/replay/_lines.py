"""A log's requests as the histories the autopilot plans over.

A proxy keys what it does by conversation and sees each request whole; so does the replay. The
recorded requests of one conversation (`ipse.prefix.Request.conversation`: a Claude Code thread
or sub-agent, a Codex rollout; None where the log does not say) fall into **stretches**: runs of
requests that send one growing history, each the first ``count`` items of one list (a request
that retried or branched shares the part before its branch). A request of the conversation that
shares nothing with an open stretch starts a new one.

The agent CLI's own compaction splits a conversation: the first call after it (marked
``compaction`` by the reader) opens a stretch whose first items are the agent CLI's opening, its
summary and what it carried over (`Stretch.kept`: the items of that first call). Requests of a
conversation whose very first call is a compaction call (Claude Code's compacting sub-agent) are
**compacting calls**: they summarise another conversation and are no history of their own.

A **line** is what the autopilot sees when it keeps the agent CLI from compacting: the stretches
of a conversation joined at each compaction it prevented, the opening of the later stretch left
out (`Line.items`: the first stretch's history, then each later one's items after its opening).
Without the autopilot's cut, a stretch after a compaction is a line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ipse.prefix import Request
from ipse.prefix._shared import SharedHistory
from ipse.transcript._shared import Codec, body_codec


@dataclass(slots=True)
class Member:
    """A recorded request in its stretch: ``count`` leading items of the stretch's history are
    its own too (where it branched off, fewer than it sent)."""

    request: Request
    count: int

    def items(self, key: str) -> list[Any]:
        """The items the request sent, as it sent them (its breakpoints in place)."""
        body = self.request.body
        value = body[key]
        return value if isinstance(value, list) else list(value)


@dataclass(slots=True)
class Stretch:
    """Requests of one conversation that send one growing history (`items`: the longest
    known, the shared list where the reader holds one)."""

    conversation: str | None
    codec: Codec
    items: list[Any]
    members: list[Member] = field(default_factory=list)
    after_compaction: bool = False
    source: object = None  # the reader's shared list, when the members are views of it

    @property
    def kept(self) -> int:
        """The items of the agent CLI's opening after a compaction (0 for a first stretch)."""
        return self.members[0].count if self.after_compaction and self.members else 0

    @property
    def front(self) -> Mapping[str, Any]:
        """Everything but the history, as the stretch's newest request sent it."""
        body = self.members[-1].request.body
        if isinstance(body, SharedHistory):
            return body.front
        key = self.codec.history_key
        return {k: v for k, v in body.items() if k != key}


@dataclass(slots=True)
class Line:
    """Stretches joined where the autopilot kept the agent CLI from compacting."""

    stretches: list[Stretch]

    @property
    def conversation(self) -> str | None:
        return self.stretches[0].conversation

    @property
    def codec(self) -> Codec:
        return self.stretches[0].codec

    def offsets(self) -> list[int]:
        """Where each stretch's own items begin in `items`."""
        out, at = [], 0
        for n, stretch in enumerate(self.stretches):
            out.append(at)
            at += len(stretch.items) - (stretch.kept if n else 0)
        return out

    def items(self) -> list[Any]:
        """The history the autopilot sees: the first stretch's, then each later stretch's
        items after the agent CLI's opening."""
        out = list(self.stretches[0].items)
        for stretch in self.stretches[1:]:
            out.extend(stretch.items[stretch.kept :])
        return out

    def end(self, stretch: int, member: Member) -> int:
        """The index in `items` of the last item ``member`` shares with its stretch (a
        compaction's first call ends where the history before the compaction ended)."""
        offset = self.offsets()[stretch]
        if stretch == 0:
            return member.count - 1
        kept = self.stretches[stretch].kept
        return offset + max(0, member.count - kept) - 1

    def members(self) -> list[tuple[int, Member]]:
        """Every member with the number of its stretch."""
        return [(n, m) for n, s in enumerate(self.stretches) for m in s.members]


@dataclass(slots=True)
class Grouped:
    """A log's conversations as stretches (in the order each opened) and its compacting
    calls."""

    stretches: list[Stretch]
    compacting: list[Request]


def group(requests: Sequence[Request]) -> Grouped:
    """The stretches of ``requests`` (in the order given: time order) and the compacting calls."""
    stretches: list[Stretch] = []
    open_by: dict[str | None, list[Stretch]] = {}
    compacting: list[Request] = []
    compacting_conversations: set[str | None] = set()
    for request in requests:
        key = request.conversation
        known = open_by.get(key, [])
        # (a log that names no conversation has no compacting one)
        compacting_call = key in compacting_conversations or not known
        if request.compaction and compacting_call and key is not None:
            compacting_conversations.add(key)
            compacting.append(request)
            continue
        placed = _place(request, known)
        if placed is None:
            placed = _open(request, after_compaction=request.compaction and bool(known))
            open_by.setdefault(key, []).append(placed)
            stretches.append(placed)
    return Grouped(stretches, compacting)


def lines_of(stretches: Sequence[Stretch]) -> list[list[Stretch]]:
    """Per conversation, its stretches in order, cut into runs that each start with a stretch
    not opened by a compaction: the candidates for one line each (the caller joins a run's
    stretches as far as the autopilot kept the agent CLI from compacting)."""
    runs: list[list[Stretch]] = []
    last: dict[str | None, list[Stretch]] = {}
    for stretch in stretches:
        run = last.get(stretch.conversation)
        if stretch.after_compaction and run is not None:
            run.append(stretch)
            continue
        run = [stretch]
        last[stretch.conversation] = run
        runs.append(run)
    return runs


def _open(request: Request, *, after_compaction: bool) -> Stretch:
    body = request.body
    codec = body_codec(body, request.provider)
    if isinstance(body, SharedHistory) and not body.tail:
        stretch = Stretch(request.conversation, codec, body.base, source=body.base)
        stretch.after_compaction = after_compaction
        stretch.members.append(Member(request, body.count))
        return stretch
    items = Member(request, 0).items(codec.history_key)
    stretch = Stretch(request.conversation, codec, items, after_compaction=after_compaction)
    stretch.members.append(Member(request, len(items)))
    return stretch


def _place(request: Request, known: Sequence[Stretch]) -> Stretch | None:
    """Add ``request`` to the newest stretch whose history it continues; None when it
    continues none."""
    body = request.body
    for stretch in reversed(known):
        if isinstance(body, SharedHistory) and stretch.source is not None:
            if body.base is stretch.source:
                stretch.members.append(Member(request, body.count))
                return stretch
            continue
        items = Member(request, 0).items(stretch.codec.history_key)
        shared = _shared(items, stretch.items, stretch.codec.breakpoint_key)
        if shared == 0:
            continue
        if len(items) > len(stretch.items) and shared >= len(stretch.items) - 1:
            # it extends the longest so far (its last item as the client now sends it: a
            # retried or edited prompt goes on from there): the history grows
            stretch.items, shared = items, len(items)
        stretch.members.append(Member(request, shared))
        return stretch
    return None


def _shared(items: Sequence[Any], history: Sequence[Any], mark: str | None) -> int:
    """How many leading items ``items`` shares with ``history`` (0 unless the first does),
    breakpoints aside (a client moves them to its newest message every request)."""
    if not items or not history or not _same(items[0], history[0], mark):
        return 0
    n = min(len(items), len(history))
    if _same(items[n - 1], history[n - 1], mark):
        return len(items) if n == len(history) and len(items) > n else n
    common = 1
    while common < n and _same(items[common], history[common], mark):
        common += 1
    return common


def _same(first: Any, second: Any, mark: str | None) -> bool:
    """Whether two items are one, breakpoints (``mark``, the dialect's key) aside."""
    if first is second or first == second:
        return True
    if mark is None or not (isinstance(first, Mapping) and isinstance(second, Mapping)):
        return False
    return _unmarked(first, mark) == _unmarked(second, mark)


def _unmarked(item: Mapping[str, Any], mark: str) -> dict[str, Any]:
    """An item without its breakpoints (on it, and on the blocks of its content), its text
    content as one text block (a client sends its newest message as blocks, to mark it, and
    the same message as a string later)."""
    out = {k: v for k, v in item.items() if k != mark}
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        out["content"] = [
            {k: v for k, v in b.items() if k != mark} if isinstance(b, Mapping) else b
            for b in content
        ]
    return out
