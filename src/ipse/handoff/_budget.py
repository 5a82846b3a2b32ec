"""A handoff held to a token budget: the oldest agent narration goes to the archive, as one item.

Without a budget nothing authored leaves the context. With one, the rewritten part (everything
before the cut, after the handoff: the human's words, the agent's narration, the notes, the
marker and its ledger) is held to ``budget`` tokens by moving the text of the oldest agent
messages out, oldest first, as few as it takes: the human's words (rules, requests), the
checkpoint notes and the ledger are never moved, and no word that stays is rewritten. What
moves becomes one archive item (`page_item`), ``page-`` and a hash of its content, which the
marker names ("your narration of messages 3–41 (12,400 tokens): recall page-…"); `recall` gives
it back word for word, and `ipse.handoff.verify` proves every moved text is in it.

The budget is shared between the narration and the ledger: the ledger keeps its cap while
narration can still move out; when moving every agent message does not fit, the ledger is
scaled down (`shrink_ledger`), its newest entries of each section kept, down to no entries at
all. When even that does not fit (the human wrote more than the budget), the handoff keeps
what it must and says so (`Fit.met`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from ipse import jsonio
from ipse.handoff._report import Removed
from ipse.transcript import Message, Text

PAGE_TOOL = "narration"


class Fit:
    """One try at a page: the tokens of the rewritten part it gives, and the handoff's parts:
    ``result`` (what the caller built for this page), ``paged`` (message indices whose text
    moved out), ``met`` (the rewritten part fits the budget)."""

    __slots__ = ("met", "paged", "result", "tokens")

    def __init__(self, tokens: int, result: Any, paged: tuple[int, ...] = (), met: bool = True):
        self.tokens = tokens
        self.result = result
        self.paged = paged
        self.met = met


def candidates(messages: Sequence[Message], count: Callable[[str], int]) -> list[tuple[int, int]]:
    """(message index, tokens of its text) of each agent message with text, oldest first."""
    out = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        texts = [b.text for b in message.blocks if isinstance(b, Text) and b.text.strip()]
        tokens = sum(count(text) for text in texts)
        if tokens:
            out.append((index, tokens))
    return out


def fit(
    budget: int,
    narration: Sequence[tuple[int, int]],
    attempt: Callable[[tuple[int, ...]], tuple[int, Any]],
) -> Fit:
    """The fewest oldest agent messages whose text, moved out, brings the rewritten part to
    ``budget`` tokens (``attempt(page)`` hands off with that page and counts the result)."""
    tokens, result = attempt(())
    if tokens <= budget or not narration:
        return Fit(tokens, result, (), tokens <= budget)
    k = 0
    while True:
        k = _next(narration, k, tokens - budget)
        page = tuple(index for index, _ in narration[:k])
        tokens, result = attempt(page)
        if tokens <= budget or k >= len(narration):
            return Fit(tokens, result, page, tokens <= budget)


def shrink_ledger(
    budget: int,
    fitted: Fit,
    ledger: int,
    attempt: Callable[[tuple[int, ...], int], tuple[int, Any]],
) -> Fit:
    """``fitted`` (every narration it could move out moved, still over ``budget``) with the
    ledger's cap lowered from the ``ledger`` tokens it took by the excess, again until the
    rewritten part fits or the cap is 0 (``attempt(page, cap)`` hands off and counts)."""
    cap, tokens, result = ledger, fitted.tokens, fitted.result
    while tokens > budget and cap > 0:
        cap = max(0, cap - (tokens - budget))
        fewer, smaller = attempt(fitted.paged, cap)
        if fewer >= tokens:
            break  # the ledger is not what holds it over (the notes carry it)
        tokens, result = fewer, smaller
    return Fit(tokens, result, fitted.paged, tokens <= budget)


def _next(narration: Sequence[tuple[int, int]], k: int, excess: int) -> int:
    """How many messages to move out so that the ones added hold ``excess`` tokens or more
    (at least one more)."""
    moved = 0
    while k < len(narration):
        moved += narration[k][1]
        k += 1
        if moved >= excess:
            break
    return k


def page_item(paged: Sequence[tuple[int, Sequence[str]]], tokens: int) -> Removed:
    """The archive item of moved narration: its texts by message, in order, and where they
    were; the id is ``page-`` and a hash of that content."""
    first, last = paged[0][0], paged[-1][0]
    call: dict[str, Any] = {
        "type": "paged_narration",
        "first_message": first,
        "last_message": last,
        "tokens": tokens,
        "messages": [{"message": index, "texts": list(texts)} for index, texts in paged],
    }
    digest = hashlib.sha256(jsonio.dumps(call)).hexdigest()[:16]
    return Removed("page", f"page-{digest}", PAGE_TOOL, call, None, first)


__all__ = ["PAGE_TOOL", "Fit", "candidates", "fit", "page_item", "shrink_ledger"]
