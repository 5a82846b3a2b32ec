"""What a strip did: the cut, every removed item (for the archive), and what was added.

`Removed` holds the provider's original JSON of a removed tool call and its result (or of a
removed thinking block, or a server-tool block), exactly as read, so the archive can give it back
byte for byte. `HandoffReport` is a plain value; measuring it in tokens is
`ipse.handoff._measure`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ipse.handoff._cut import CutKind
from ipse.handoff._validate import Problem

RemovedKind: TypeAlias = Literal["tool", "thinking", "server_tool", "page"]


@dataclass(frozen=True, slots=True)
class Removed:
    """One removed item: a tool call with its result, a thinking block, or a server-tool pair.

    ``id`` is the call id (thinking blocks: ``thinking-`` and a content hash; paged narration:
    ``page-`` and a content hash); ``call`` and ``result`` are the original provider dicts
    (``result`` is None when the call had none; a page's ``call`` holds the texts it moved)."""

    kind: RemovedKind
    id: str
    tool: str
    call: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    message: int  # index of the message that held the call (or the block), in the input


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffReport:
    """The outcome of `ipse.handoff._strip`."""

    cut: int  # input index: messages [0, cut) were rewritten
    requested_cut: int  # where ``at`` asked for, before settling on tool exchanges
    cut_kind: CutKind
    checkpoint_id: str | None
    rewritten_out: int  # output messages [0, rewritten_out) are the rewritten part
    removed: tuple[Removed, ...]
    kept_calls: tuple[str, ...]  # call ids kept in the rewritten part (checkpoint, boundary)
    breadcrumbs: tuple[str, ...] = ()
    promoted: tuple[str, ...] = ()  # thinking text kept as agent text
    dropped_empty_texts: int = 0
    merged_messages: int = 0  # neighbouring messages of one role merged (alternating dialects)
    carried_problems: tuple[Problem, ...] = field(default=())  # in the untouched part, as input
    # agent texts moved out under a budget: (input message index, its texts in order)
    paged: tuple[tuple[int, tuple[str, ...]], ...] = ()
    page: Removed | None = None  # the archive item that holds them (set by the handoff)
    marker: str | None = None  # the text the handoff put at the cut, if any

    @property
    def removed_calls(self) -> int:
        return sum(1 for r in self.removed if r.kind in ("tool", "server_tool"))

    @property
    def removed_thinking(self) -> int:
        return sum(1 for r in self.removed if r.kind == "thinking")

    @property
    def archived_items(self) -> tuple[Removed, ...]:
        """What the archive gets: the removed items, and the paged narration's item."""
        return self.removed if self.page is None else (*self.removed, self.page)


__all__ = ["HandoffReport", "Removed", "RemovedKind"]
