"""The contexts a session could go on with after a cut, one per strategy, in tokens and text.

- ``none``: the whole history before the cut.
- ``ipse``: the micro-handoff (`ipse.handoff.strip`): tool traffic and thinking removed, every
  authored word and the checkpoint notes kept; what it removed is archived, so it is recallable
  by id (``recall`` holds that text). ``ipse-no-notes`` is the same without the checkpoint
  tool's notes, offered only where the session has some.
- ``mask-N``: observation masking as others ship it: every tool result but the last N replaced
  by a placeholder; calls, thinking and text kept.
- ``truncate``: the oldest messages dropped until the rest fits in ipse's token count.
- ``compaction-summary``: where the agent CLI compacted at this very cut, what it kept (its
  compaction summary, the replayed items).

Tokens are o200k counts of `block_text` of what each context holds (system prompt and tool
definitions are the same for all and are left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ipse.errors import IpseError
from ipse.handoff import is_checkpoint, strip
from ipse.probe._timeline import Timeline, block_text
from ipse.tokens import MemoCounter, TokenCounter, default_counter
from ipse.transcript import Message, Thinking, ToolCall, ToolResult

MASKS = (3, 5, 10)
PLACEHOLDER = "[tool output omitted]"
SUMMARY = "compaction-summary"  # the agent CLI's own summary at its compaction points


@dataclass(frozen=True, slots=True)
class Context:
    """One strategy's context after the cut: its text, its tokens, and what is recallable."""

    name: str
    tokens: int
    text: str
    recall: str = ""  # text the strategy can bring back on request (ipse's archive)
    note: str = ""  # why a strategy is missing or how it was built


class Meter:
    """Token counts of a timeline's blocks and messages, each counted once."""

    def __init__(self, line: Timeline, counter: TokenCounter | None = None) -> None:
        self.timeline = line
        self.counter = MemoCounter(counter or default_counter())
        self._messages: list[int] | None = None

    def text(self, text: str) -> int:
        return self.counter.count(text)

    def messages(self) -> list[int]:
        if self._messages is None:
            self._messages = [
                sum(self.text(block_text(b)) for b in m.blocks) for m in self.timeline.messages
            ]
        return self._messages


def contexts(meter: Meter, cut: int) -> list[Context]:
    """Every strategy's context after ``cut`` (a valid cut of the timeline)."""
    line = meter.timeline
    before = line.messages[:cut]
    out = [Context("none", sum(meter.messages()[:cut]), _text(before))]
    ipse = _ipse(meter, cut)
    out.extend(ipse)
    for n in MASKS:
        out.append(_mask(meter, before, n))
    budget = ipse[0].tokens if ipse and ipse[0].name == "ipse" else None
    if budget is not None:
        out.append(_truncate(meter, cut, budget))
    for compaction in line.compactions:
        if compaction.index == cut:
            text = compaction.text()
            note = "the agent CLI's compaction summary"
            out.append(Context(SUMMARY, meter.text(text), text, note=note))
    return out


def _text(messages: Sequence[Message]) -> str:
    return "\n".join(block_text(b) for m in messages for b in m.blocks)


def _ipse(meter: Meter, cut: int) -> list[Context]:
    line = meter.timeline
    try:
        output, report = strip(line.conversation(cut), "end")
    except IpseError as exc:
        return [Context("ipse", 0, "", note=f"strip refused this cut: {exc}")]
    removed = {r.id for r in report.removed if r.kind != "thinking"}
    recall = [
        block_text(b)
        for m in line.messages[:cut]
        for b in m.blocks
        if (isinstance(b, ToolCall) and b.id in removed)
        or (isinstance(b, ToolResult) and b.call_id in removed)
        or (isinstance(b, Thinking) and report.removed_thinking)
    ]
    kept = output.messages
    text = _text(kept)
    tokens = sum(meter.text(block_text(b)) for m in kept for b in m.blocks)
    out = [Context("ipse", tokens, text, "\n".join(recall))]
    notes = {
        b.id for m in kept for b in m.blocks if isinstance(b, ToolCall) and is_checkpoint(b.name)
    }
    if notes:
        bare = [
            b
            for m in kept
            for b in m.blocks
            if not (isinstance(b, ToolCall) and b.id in notes)
            and not (isinstance(b, ToolResult) and b.call_id in notes)
        ]
        out.append(
            Context(
                "ipse-no-notes",
                sum(meter.text(block_text(b)) for b in bare),
                "\n".join(block_text(b) for b in bare),
                "\n".join(recall),
            )
        )
    return out


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


__all__ = ["MASKS", "PLACEHOLDER", "Context", "Meter", "contexts"]
