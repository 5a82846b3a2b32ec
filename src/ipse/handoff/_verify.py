"""The proof that a handoff lost nothing: every authored word is still there, in order.

`verify(before, after)` checks two things. The untouched part: the last messages of ``before``
from the cut on are identical, as written JSON, to the last messages of ``after``. The rewritten
part: every non-empty text block of a user or assistant message before the cut appears in the
rewritten part of ``after``, in a message of the same role, in order, byte for byte (texts may
have been joined with others, so each is found as a substring, left to right).

Two things a handoff adds are accounted for. Blocks it inserted (the marker at the cut) are
named in ``inserted`` and never searched, so no authored text is "found" in them. Under a
budget, an agent message's texts may instead be in the archived page (``page``, the item the
archive stores): the proof decodes the item's bytes as the archive stores them and requires
those texts there, all of them, in order, byte for byte; every other text must be in the
context as before. Only agent messages can be paged: a human's text is always searched.

Without a cut, the untouched part is the longest run of identical trailing messages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse.handoff._cut import CHECKPOINT_TOOL, At, resolve_cut, settle
from ipse.transcript import Conversation, Message, Text, ToolCall, ToolResult
from ipse.transcript._shared import Block, codec

if TYPE_CHECKING:
    from ipse.archive._shared import Archivable


@dataclass(frozen=True, slots=True)
class Lost:
    """An authored text of ``before`` not found in ``after``."""

    index: int  # message index in ``before``
    role: str
    chars: int
    preview: str

    def __str__(self) -> str:
        return f"message {self.index} ({self.role}, {self.chars} chars): {self.preview!r}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of `verify`: ``ok`` when nothing authored was lost and the tail is identical."""

    ok: bool
    cut: int  # messages [cut, ...) of ``before`` are the untouched part
    tail_messages: int
    tail_identical: bool
    checked_texts: int
    authored_chars: int  # authored characters of ``before`` (all messages)
    found_chars: int  # of those, found in ``after`` or in the archived page
    lost: tuple[Lost, ...] = field(default=())
    paged_chars: int = 0  # of those found, the ones found in the archived page

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "cut": self.cut,
            "tail_messages": self.tail_messages,
            "tail_identical": self.tail_identical,
            "checked_texts": self.checked_texts,
            "authored_chars": self.authored_chars,
            "found_chars": self.found_chars,
            "paged_chars": self.paged_chars,
            "lost": [
                {"message": x.index, "role": x.role, "chars": x.chars, "preview": x.preview}
                for x in self.lost
            ],
        }


def authored_texts(messages: Sequence[Message]) -> list[tuple[int, str, str]]:
    """(message index, role, text) of every text block of user/assistant messages that is not
    empty or only whitespace (the API rejects those, so a handoff drops them)."""
    return [
        (i, m.role, b.text)
        for i, m in enumerate(messages)
        if m.role in ("user", "assistant")
        for b in m.blocks
        if isinstance(b, Text) and b.text.strip()
    ]


def authored_chars(messages: Sequence[Message]) -> int:
    """Characters of authored text in user and assistant messages."""
    return sum(len(text) for _, _, text in authored_texts(messages))


def verify(
    before: Conversation,
    after: Conversation,
    at: At | None = None,
    checkpoint_tool: str = CHECKPOINT_TOOL,
    *,
    inserted: Collection[Block] = (),
    page: Archivable | None = None,
) -> Verdict:
    """Check ``after`` keeps every authored text of ``before`` and its untouched part as it was.

    ``at`` names the cut the handoff used (``checkpoint``, ``now``, an index; ``checkpoint``
    looks for ``checkpoint_tool``); without it the untouched part is the longest run of
    identical trailing messages. ``inserted``: blocks the handoff added (never searched);
    ``page``: the archive item that holds agent texts moved out under a budget."""
    # Messages are written out one pair at a time, only as far as the comparison goes: the
    # whole conversation as JSON would be one more copy of the input in memory.
    old = before.messages
    new = after.messages
    if at is None:
        tail = _common_suffix(before, after)
        cut = len(old) - tail
        # A handoff keeps some tool blocks in the part it rewrites (the checkpoint's call and
        # result), always as they were: one that differs was changed, not handed off.
        identical = not _changed_tool_blocks(before.messages, after.messages[: len(new) - tail])
    else:
        cut = settle(before.messages, resolve_cut(before, at, checkpoint_tool).index)
        tail = len(old) - cut
        identical = tail <= len(new) and (
            tail == 0
            or all(
                _written(after, a) == _written(before, b)
                for a, b in zip(new[-tail:], old[cut:], strict=True)
            )
        )
    prefix_out = after.messages[: len(new) - tail] if tail <= len(new) else after.messages
    wanted = authored_texts(before.messages[:cut])
    paged = _paged(page)
    in_page = [w for w in wanted if w[1] == "assistant" and w[0] in paged]
    in_context = [w for w in wanted if not (w[1] == "assistant" and w[0] in paged)]
    lost, checked = _find_in_order(in_context, prefix_out, {id(b) for b in inserted})
    page_lost = _check_page(in_page, paged)
    lost.extend(page_lost)
    prefix_chars = authored_chars(before.messages[:cut])
    tail_chars = authored_chars(before.messages[cut:])
    found = prefix_chars - sum(x.chars for x in lost) + (tail_chars if identical else 0)
    return Verdict(
        ok=identical and not lost,
        cut=cut,
        tail_messages=tail,
        tail_identical=identical,
        checked_texts=checked + len(in_page),
        authored_chars=prefix_chars + tail_chars,
        found_chars=found,
        lost=tuple(sorted(lost, key=lambda x: x.index)),
        paged_chars=sum(len(w[2]) for w in in_page) - sum(x.chars for x in page_lost),
    )


def _paged(page: Archivable | None) -> Mapping[int, list[str]]:
    """The texts of an archived page by message index, read back from the bytes the archive
    stores for it (`ipse.archive.payload`)."""
    if page is None or page.call is None:
        return {}
    from ipse.archive._shared import payload

    stored = jsonio.loads(payload(page.call))
    out: dict[int, list[str]] = {}
    for entry in stored.get("messages", ()) if isinstance(stored, Mapping) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("message"), int):
            texts = entry.get("texts")
            out[entry["message"]] = [t for t in texts if isinstance(t, str)] if texts else []
    return out


def _check_page(
    wanted: Sequence[tuple[int, str, str]], paged: Mapping[int, list[str]]
) -> list[Lost]:
    """The paged texts not in the page, all of them, in order, byte for byte."""
    lost: list[Lost] = []
    for index, texts in paged.items():
        expected = [w for w in wanted if w[0] == index]
        if [w[2] for w in expected] != texts:
            lost.extend(Lost(i, role, len(text), _preview(text)) for i, role, text in expected)
    return lost


def _changed_tool_blocks(before: Sequence[Message], rewritten: Sequence[Message]) -> list[str]:
    """Ids of tool calls and results in ``rewritten`` that differ from ``before``'s same-id one."""
    original: dict[tuple[str, str], Any] = {}
    for message in before:
        for block in message.blocks:
            key = _tool_key(block)
            if key is not None:
                original[key] = block
    changed = []
    for message in rewritten:
        for block in message.blocks:
            key = _tool_key(block)
            if key is not None and key in original and original[key] != block:
                changed.append(key[1])
    return changed


def _tool_key(block: Any) -> tuple[str, str] | None:
    if isinstance(block, ToolCall):
        return ("call", block.id)
    if isinstance(block, ToolResult):
        return ("result", block.call_id)
    return None


def _find_in_order(
    wanted: Sequence[tuple[int, str, str]],
    messages: Sequence[Message],
    skipped: Collection[int] = (),
) -> tuple[list[Lost], int]:
    """Find each wanted text left to right; texts not found are lost (the search goes on).
    Blocks whose ``id`` is in ``skipped`` (what the handoff inserted) are not searched."""
    haystack = [
        (m.role, b.text)
        for m in messages
        for b in m.blocks
        if isinstance(b, Text) and b.text and id(b) not in skipped
    ]
    lost: list[Lost] = []
    position, offset = 0, 0
    for index, role, text in wanted:
        at = _search(haystack, position, offset, role, text)
        if at is None:
            lost.append(Lost(index, role, len(text), _preview(text)))
            continue
        position, offset = at
    return lost, len(wanted)


def _search(
    haystack: Sequence[tuple[str, str]], position: int, offset: int, role: str, text: str
) -> tuple[int, int] | None:
    for p in range(position, len(haystack)):
        hay_role, hay_text = haystack[p]
        if hay_role != role:
            continue
        found = hay_text.find(text, offset if p == position else 0)
        if found >= 0:
            return p, found + len(text)
    return None


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _common_suffix(before: Conversation, after: Conversation) -> int:
    """How many trailing messages are identical as written."""
    old, new = before.messages, after.messages
    n = 0
    while (
        n < len(old)
        and n < len(new)
        and _written(before, old[-1 - n]) == _written(after, new[-1 - n])
    ):
        n += 1
    return n


def _written(conversation: Conversation, message: Message) -> bytes:
    """A message as the JSON its dialect writes (the bytes that go on the wire)."""
    return jsonio.dumps(codec(conversation.dialect).write_message(message))


__all__ = ["Lost", "Verdict", "authored_chars", "authored_texts", "verify"]
