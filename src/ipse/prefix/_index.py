"""The requests replayed so far, found by prefix hash, by first message and by thread: what
a new request could have appended to.

Every prefix hash seen maps to the last request holding it, and prefix hashes are
prefix-closed, so the positions a new request shares with the best earlier one are found by
bisection over its own chain; side requests of other conversations interleaved in a log are
matched to their own predecessors, as a content-addressed cache would match them.
"""

from __future__ import annotations

from ipse.prefix._causes import divergence
from ipse.prefix._columns import backing
from ipse.prefix._flat import Flat
from ipse.prefix._requests import Request


class PrefixIndex:
    """The requests replayed so far, found by prefix hash, by first message and by thread: what
    a new request could have appended to.

    A prefix hash maps to a cell holding the slot in `seen` of the last request that had it; a
    request that extends the one before it takes over that one's cell, so only its new
    positions are indexed (the cost follows the new work, not the history)."""

    def __init__(self) -> None:
        self.index: dict[int, list[int]] = {}
        self.cells: list[list[int]] = []
        self.by_first: dict[int, int] = {}  # first message's hash -> slot in `seen`
        self.by_conversation: dict[str, int] = {}  # known thread -> its last slot in `seen`
        self.seen: list[tuple[Request, Flat]] = []

    def candidate(self, request: Request, flat: Flat, unrecorded: bool) -> tuple[int, int | None]:
        """Positions shared with the request this one could have appended to, and its slot."""
        seen = self.seen
        shared, slot = _best(flat, self.index, self.by_first, len(seen[-1][1].chain) if seen else 0)
        if slot is not None and _apart(request, seen[slot][0], unrecorded):
            shared, slot = 0, None
        if slot is None and request.conversation is not None:
            slot = self.by_conversation.get(request.conversation)
        return shared, slot

    def add(self, request: Request, flat: Flat) -> None:
        """Index the request just replayed."""
        seen, cells, index = self.seen, self.cells, self.index
        slot_now = len(seen)
        start = 0
        if seen and flat.extends(seen[-1][1]):
            cell = cells[-1]
            cell[0] = slot_now
            start = len(seen[-1][1].chain)
        elif seen and (start := divergence(flat, seen[-1][1])):
            # the prefix shared with the request before now names this one, as if indexed
            # anew: that one's positions past it keep naming it, in a cell of their own, and
            # its cell (which names the rest of its positions) is this one's
            previous = cells[-1]
            kept = [previous[0]]
            for h in seen[-1][1].chain[start:]:
                index[h] = kept
            cell = previous
            cell[0] = slot_now
        else:
            cell = [slot_now]
        cells.append(cell)
        seen.append((request, flat))
        for h in backing(flat.chain)[start : len(flat.chain)]:
            index[h] = cell
        first = flat.first_message
        if first is not None:
            self.by_first[first] = slot_now
        if request.conversation is not None:
            self.by_conversation[request.conversation] = slot_now


def _best(
    flat: Flat, index: dict[int, list[int]], by_first: dict[int, int], previous: int = 0
) -> tuple[int, int | None]:
    """Positions shared with the best earlier request, and that request's slot; ``previous``:
    the positions of the request before it, tried first (prefix hashes are prefix-closed, so
    when its last is known and the next is not, that is the bisection's answer)."""
    chain = backing(flat.chain)  # positions below len(flat.chain) only
    lo, hi = 0, len(flat.chain)
    if previous and previous < hi and chain[previous - 1] in index and chain[previous] not in index:
        lo = hi = previous  # (the usual answer, where the log goes on from the request before)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chain[mid - 1] in index:
            lo = mid
        else:
            hi = mid - 1
    if lo:
        return lo, index[chain[lo - 1]][0]
    first = flat.first_message
    return 0, by_first.get(first) if first is not None else None


def _apart(request: Request, candidate: Request, unrecorded: bool) -> bool:
    """Whether ``candidate``, though it shares a prefix, is another conversation's: a request
    is measured against its own conversation only. Two requests of known, different
    conversations (another agent's thread, whose shared front is a placeholder when
    ``unrecorded``; another session of a proxy's record) are apart."""
    new, old = request.conversation, candidate.conversation
    if unrecorded:  # (a session's request: its system prompt and tools not recorded)
        return new != old
    return new is not None and old is not None and new != old
