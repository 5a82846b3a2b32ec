"""The contexts a session could go on with after a cut, one per strategy, in tokens and text.

- ``none``: the whole history before the cut.
- ``ipse``: the handoff as ipse makes it (`ipse.handoff.run`): tool traffic and thinking
  removed, every authored word and the checkpoint notes kept, the marker with its ledger at the
  cut; what it removed is its archive. ``ipse-no-notes`` is the same without the checkpoint
  tool's notes, offered only where the session has some.
- ``ipse-budget``: the same handoff held to the agent CLI's summary's own tokens at a compaction
  point (to `Plan.budget` at other cuts, and absent there without one): the oldest agent
  narration is paged out to the archive as one item.
- ``mask-N``: observation masking as others ship it: every tool result but the last N replaced
  by a placeholder; calls, thinking and text kept.
- ``truncate``: the oldest messages dropped until the rest fits in ipse's token count.
- ``compaction-summary``: where the agent CLI compacted at this very cut, what it kept (its
  compaction summary, the replayed items); its archive is the transcript its summary names
  (`transcript_items`), if it names one.

Tokens are o200k counts of `block_text` of what each context holds (system prompt and tool
definitions are the same for all and are left out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ipse._tokens import MemoCounter, TokenCounter, default_counter
from ipse.errors import IpseError
from ipse.handoff import Handoff, HandoffOptions, run
from ipse.handoff._shared import DEFAULT_LEDGER_TOKENS, is_checkpoint_call
from ipse.probe._timeline import Compaction, Timeline, block_text
from ipse.transcript import Message, Text, ToolCall, ToolResult
from ipse.transcript._shared import Block

if TYPE_CHECKING:
    from ipse.archive._shared import Archivable

MASKS = (3, 5, 10)
PLACEHOLDER = "[tool output omitted]"
SUMMARY = "compaction-summary"  # the agent CLI's own summary at its compaction points
BUDGETED = "ipse-budget"
FITS = 4  # tries at holding ipse-budget to its tokens as the probe counts them
SESSION = "session:probe"  # the key a handoff is filed under where the session has none
# A summary that names the transcript it was made from ("read the full transcript at: PATH").
_TRANSCRIPT = re.compile(r"transcript at:?\s+(\S+\.jsonl)\b")


@dataclass(frozen=True, slots=True)
class Context:
    """One strategy's context after the cut: its text, its tokens, and its archive (the items
    a recall can bring back; None for a strategy that has none)."""

    name: str
    tokens: int
    text: str
    items: tuple[Archivable, ...] | None = None
    note: str = ""  # why a strategy is missing or how it was built


@dataclass(frozen=True, slots=True)
class Plan:
    """How ipse's contexts are made: the session they are filed under (the marker names it),
    and the budget of ``ipse-budget`` at a cut where the agent CLI did not compact."""

    session: str = SESSION
    budget: int | None = None


@dataclass(frozen=True, slots=True)
class _Item:
    """A transcript's message as an archive item (the shape `ipse.archive.Archivable` asks)."""

    kind: str
    id: str
    tool: str
    call: dict[str, Any] | None
    result: dict[str, Any] | None
    message: int


class Meter:
    """Token counts of a timeline's blocks and messages, each counted once."""

    def __init__(self, line: Timeline, counter: TokenCounter | None = None) -> None:
        self.timeline = line
        self.counter = MemoCounter(counter or default_counter())
        self._messages: list[int] | None = None

    def text(self, text: str) -> int:
        return self.counter.count(text)

    def blocks(self, blocks: Iterable[Block]) -> int:
        return sum(self.text(block_text(b)) for b in blocks)

    def messages(self) -> list[int]:
        if self._messages is None:
            self._messages = [self.blocks(m.blocks) for m in self.timeline.messages]
        return self._messages


def contexts(meter: Meter, cut: int, plan: Plan | None = None) -> list[Context]:
    """Every strategy's context after ``cut`` (a valid cut of the timeline)."""
    plan = plan or Plan()
    line = meter.timeline
    before = line.messages[:cut]
    out = [Context("none", sum(meter.messages()[:cut]), _text(before))]
    handed = handoff(meter, cut, plan.session)
    ipse = ipse_contexts(meter, handed)
    out.extend(ipse)
    summary = next((c for c in line.compactions if c.index == cut), None)
    budget = meter.text(summary.text()) if summary is not None else plan.budget
    if budget is not None:
        out.append(held(meter, cut, plan.session, budget))
    out.extend(_mask(meter, before, n) for n in MASKS)
    if not isinstance(handed, str):
        out.append(_truncate(meter, cut, ipse[0].tokens))
    if summary is not None:
        removed = () if isinstance(handed, str) else handed.report.removed
        out.append(summary_context(meter, summary, removed))
    return out


def _text(messages: Sequence[Message]) -> str:
    return "\n".join(block_text(b) for m in messages for b in m.blocks)


def handoff(
    meter: Meter,
    cut: int,
    session: str,
    budget: int | None = None,
    ledger_tokens: int = DEFAULT_LEDGER_TOKENS,
) -> Handoff | str:
    """ipse's handoff of the messages before ``cut`` (a budget: held to it; its ledger capped
    at ``ledger_tokens``), or why there is none."""
    options = HandoffOptions(
        at="end", budget=budget, counter=meter.counter, ledger_tokens=ledger_tokens
    )
    try:
        return run(meter.timeline.conversation(cut), options, session=session, recallable=True)
    except IpseError as exc:
        return f"the handoff refused this cut: {exc}"


def ipse_contexts(meter: Meter, handed: Handoff | str) -> list[Context]:
    """``ipse`` (and ``ipse-no-notes`` where the notes are kept) of a handoff."""
    if isinstance(handed, str):
        return [Context("ipse", 0, "", note=handed)]
    items = handed.report.archived_items
    blocks = [b for m in handed.after.messages for b in m.blocks]
    out = [_of("ipse", meter, blocks, items)]
    results = {b.call_id: b for b in blocks if isinstance(b, ToolResult)}
    notes = {
        b.id
        for b in blocks
        if isinstance(b, ToolCall) and is_checkpoint_call(b, result=results.get(b.id))
    }
    if notes:
        bare = [b for b in blocks if _call_id(b) not in notes]
        out.append(_of("ipse-no-notes", meter, bare, items))
    return out


def _call_id(block: Block) -> str | None:
    if isinstance(block, ToolCall):
        return block.id
    if isinstance(block, ToolResult):
        return block.call_id
    return None


def _of(name: str, meter: Meter, blocks: Sequence[Block], items: Sequence[Archivable]) -> Context:
    text = "\n".join(block_text(b) for b in blocks)
    return Context(name, meter.blocks(blocks), text, tuple(items))


def held(meter: Meter, cut: int, session: str, target: int) -> Context:
    """``ipse-budget``: the handoff held to ``target`` tokens as the probe counts a context (the
    handoff counts the messages it rewrites a little differently, so the budget it is given
    is lowered by any excess, a few times at most)."""
    budget, best = target, None
    for _ in range(FITS):
        handed = handoff(meter, cut, session, budget)
        if isinstance(handed, str):
            return Context(BUDGETED, 0, "", note=handed)
        context = ipse_contexts(meter, handed)[0]
        best = context
        if context.tokens <= target or budget <= 1:
            break
        budget = max(1, budget - (context.tokens - target))
    assert best is not None
    note = f"held to {target:,} tokens"
    if best.tokens > target:
        note += ": not met (the human's words, the notes and the marker alone are more)"
    return Context(BUDGETED, best.tokens, best.text, best.items, note)


def _mask(meter: Meter, before: Sequence[Message], keep: int) -> Context:
    results = [b for m in before for b in m.blocks if isinstance(b, ToolResult)]
    masked = {id(b) for b in results[: max(0, len(results) - keep)]}
    parts: list[str] = []
    tokens = 0
    for message in before:
        for block in message.blocks:
            text = PLACEHOLDER if id(block) in masked else block_text(block)
            parts.append(text)
            tokens += meter.text(text)
    return Context(f"mask-{keep}", tokens, "\n".join(parts))


def _truncate(meter: Meter, cut: int, budget: int) -> Context:
    sizes = meter.messages()[:cut]
    start, total = 0, sum(sizes)
    while start < cut and total > budget:
        total -= sizes[start]
        start += 1
    return Context("truncate", total, _text(meter.timeline.messages[start:cut]))


def summary_context(meter: Meter, summary: Compaction, removed: Sequence[Archivable]) -> Context:
    """The agent CLI's summary; its archive is the transcript it names (the tool exchanges as
    ipse archives them, and each message's text), or none when it names none."""
    text = summary.text()
    named = _TRANSCRIPT.search(text)
    if named is None:
        note = "the agent CLI's compaction summary (it names no transcript: nothing to search)"
        return Context(SUMMARY, meter.text(text), text, note=note)
    items = (*removed, *transcript_items(meter.timeline.messages[: summary.index]))
    note = (
        f"the agent CLI's compaction summary; its archive: the transcript it names ({len(items)})"
    )
    return Context(SUMMARY, meter.text(text), text, items, note)


def transcript_items(messages: Sequence[Message]) -> tuple[Archivable, ...]:
    """Each message's text (human, agent, the agent CLI's) as an item, as a grep over the
    transcript would find it."""
    out: list[Archivable] = []
    for index, message in enumerate(messages):
        texts = [b.text for b in message.blocks if isinstance(b, Text) and b.text.strip()]
        if texts:
            call = {"role": message.role, "text": "\n".join(texts)}
            out.append(_Item("text", f"message-{index}", "transcript", call, None, index))
    return tuple(out)


__all__ = [
    "BUDGETED",
    "MASKS",
    "PLACEHOLDER",
    "SUMMARY",
    "Context",
    "Meter",
    "Plan",
    "contexts",
    "handoff",
    "held",
    "ipse_contexts",
    "summary_context",
    "transcript_items",
]
