"""The marker at the cut: one text that says what a handoff removed and how to get it back.

A handoff never removes anything unmarked. Where the agent's own checkpoint notes already carry
the ledger (the checkpoint tool appended it when it recorded them), the notes are the mark;
everywhere else (``ipse handoff`` without a checkpoint, a checkpoint answered by another tool,
a budget that paged narration out) one marker goes at the cut: the counts and tokens removed,
the session they are archived under and how to recall them (the ``recall`` tool or ``ipse
recall`` with an id), the narration paged out under a budget, then the ledger.

(Not the prompt-cache breakpoints `ipse.handoff._breakpoints` moves: this is a text.) `insert`
puts it at the cut, before the tool exchanges the handoff kept at the end of the rewritten part
(the checkpoint's call and result, or the exchange the roles needed), where the dialect's rules
allow a text there: its own user message where the roles allow one (a dialect whose roles need
not alternate, or between two turns that are not the user's); else a block of the user message
before that point, after its tool results and before its words. The output is validated again:
a marker that broke a rule would be a bug, and raises. Everything here is a pure function of
the conversation and the cut, so a proxy that hands off every later request of a conversation
writes the same bytes each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ipse.errors import InvalidConversation
from ipse.handoff._ledger import HEADING, Ledger, Rendered, derive
from ipse.handoff._recognise import result_text
from ipse.handoff._report import HandoffReport, Removed
from ipse.handoff._validate import validate
from ipse.transcript import Conversation, Message, Other, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import Codec, Origin, codec, counted_text

TAG = "[ipse handoff]"


class Placed:
    """A marker in the output: its block, the message holding it, the rewritten part's end."""

    __slots__ = ("block", "index", "rewritten")

    def __init__(self, block: Text, index: int, rewritten: int) -> None:
        self.block = block
        self.index = index
        self.rewritten = rewritten


class Marked:
    """A handoff's output with its marker: the ledger it was derived with, and where it went
    (``placed`` is None when nothing was removed, or the notes already hold the ledger)."""

    __slots__ = ("after", "ledger", "placed", "rendered", "report")

    def __init__(
        self,
        after: Conversation,
        report: HandoffReport,
        ledger: Ledger | None = None,
        rendered: Rendered | None = None,
        placed: Placed | None = None,
    ) -> None:
        self.after = after
        self.report = report
        self.ledger = ledger
        self.rendered = rendered
        self.placed = placed


def mark(
    before: Conversation,
    after: Conversation,
    report: HandoffReport,
    *,
    cap: int,
    count: Callable[[str], int],
    session: str,
    recallable: bool,
) -> Marked:
    """``after`` with its marker at the cut (see the module docstring); ``report`` says where
    the rewritten part now ends and what the marker says."""
    if not report.removed and report.page is None:
        return Marked(after, report)
    removed = {r.id for r in report.removed if r.kind != "thinking"}
    ledger = derive(before.messages[: report.cut], removed, before.system)
    rendered = ledger.text(cap, count)
    if report.page is None and notes_hold_ledger(after, report):
        return Marked(after, report, ledger, rendered)
    tokens = removed_tokens(before, report, count)
    shown = rendered.text if ledger.entries or ledger.others or ledger.cwd else ""
    text = marker_text(report, shown, tokens=tokens, session=session, recallable=recallable)
    out, placed = insert(after, report.rewritten_out, text)
    report = replace(report, rewritten_out=placed.rewritten, marker=text)
    return Marked(out, report, ledger, rendered, placed)


def removed_tokens(before: Conversation, report: HandoffReport, count: Callable[[str], int]) -> int:
    """The tokens of the blocks a handoff removed before the cut (its calls, their results,
    thinking, server-tool blocks), as `ipse.transcript.TokenTally` counts each block."""
    ids = {r.id for r in report.removed if r.kind != "thinking"}
    server = codec(before.dialect).server_tool_types
    total = 0
    for message in before.messages[: report.cut]:
        for block in message.blocks:
            gone = (
                (isinstance(block, ToolCall) and block.id in ids)
                or (isinstance(block, ToolResult) and block.call_id in ids)
                or isinstance(block, Thinking)
                or (isinstance(block, Other) and block.type in server)
            )
            if gone:
                total += count(counted_text(block))
    return total


def notes_hold_ledger(after: Conversation, report: HandoffReport) -> bool:
    """Whether a checkpoint result the rewritten part keeps carries the ledger already."""
    kept = set(report.kept_calls)
    return any(
        isinstance(b, ToolResult) and b.call_id in kept and HEADING in result_text(b)
        for m in after.messages[: report.rewritten_out]
        for b in m.blocks
    )


def marker_text(
    report: HandoffReport,
    ledger: str,
    *,
    tokens: int,
    session: str,
    recallable: bool,
) -> str:
    """The marker: what was removed, where it is, the paged narration, then the ledger."""
    calls, thinking = report.removed_calls, report.removed_thinking
    parts = [_calls(calls)] if calls else []
    if thinking:
        parts.append(f"{thinking} thinking block{'s' if thinking != 1 else ''}")
    lines = [TAG]
    if parts:
        lines[0] += (
            f" This handoff removed from the conversation so far: {', '.join(parts)} "
            f"({tokens:,} tokens)."
        )
    if report.page is not None:
        lines.append(page_line(report.page))
    if recallable:
        lines.append(
            f"All of it is archived under session {session}: the recall tool gives an item back "
            f"by its id (shown below), as does `ipse recall ID --session {session}`."
        )
    else:
        lines.append("It was not archived, so it cannot be recalled.")
    if ledger:
        lines.append(ledger)
    return "\n".join(lines)


def _calls(n: int) -> str:
    return "1 tool call with its result" if n == 1 else f"{n} tool calls with their results"


def page_line(page: Removed) -> str:
    """The sentence that names the paged narration and its recall id."""
    call = page.call or {}
    first, last = call.get("first_message"), call.get("last_message")
    tokens = call.get("tokens", 0)
    return (
        f"Your narration of messages {first}-{last} ({tokens:,} tokens) was moved to the "
        f"archive to keep this context within its budget (id {page.id}); recall gives it back "
        "word for word."
    )


def insert(conversation: Conversation, rewritten: int, text: str) -> tuple[Conversation, Placed]:
    """``conversation`` with the marker ``text`` at the cut of its first ``rewritten`` messages
    (see the module docstring); the marker's place."""
    dialect = codec(conversation.dialect)
    block = Text(text, Origin.HARNESS)
    messages = list(conversation.messages)
    at = _cut_point(messages[:rewritten])
    before = _last_speaker(messages[:at], dialect)
    after = next((m.role for m in messages[at:] if _speaks(m, dialect)), None)
    if not dialect.alternates or (before != "user" and after != "user"):
        messages.insert(at, Message("user", (block,), "blocks"))
        end = rewritten + 1
    else:
        at = _user_before(messages[:at], before)
        messages[at] = _with_marker(messages[at], block)
        end = rewritten
    out = replace(conversation, messages=tuple(messages))
    _check(out, end)
    return out, Placed(block, at, end)


def _cut_point(prefix: Sequence[Message]) -> int:
    """Where in the rewritten part the marker goes: its end, before the tool exchanges the
    handoff kept there (the checkpoint's, or the one the roles needed). After them, a handoff
    of the output would find the marker between an exchange and the turn it kept it for, and
    take the exchange away: the marker goes before, so handing off twice changes nothing."""
    at = len(prefix)
    while at > 0 and any(isinstance(b, ToolCall | ToolResult) for b in prefix[at - 1].blocks):
        at -= 1
    return at


def _speaks(message: Message, dialect: Codec) -> bool:
    """A message that takes part in turn-taking (not a system or developer instruction)."""
    return message.role in ("user", "assistant") or message.role == dialect.result_role


def _last_speaker(prefix: Sequence[Message], dialect: Codec) -> str | None:
    return next((m.role for m in reversed(prefix) if _speaks(m, dialect)), None)


def _user_before(prefix: Sequence[Message], last: str | None) -> int:
    """The rewritten part's last user message (its last message when that is the user's)."""
    for index in range(len(prefix) - 1, -1, -1):
        if prefix[index].role == "user":
            return index
    raise InvalidConversation(f"no user message before the cut to hold the marker (last: {last})")


def _with_marker(message: Message, block: Text) -> Message:
    """``message`` with the marker before its words (after the tool results that must open a
    user message): what the user turn says comes after the note of what was removed."""
    form = "blocks" if message.content_form == "none" else message.content_form
    at = 0
    while at < len(message.blocks) and isinstance(message.blocks[at], ToolResult):
        at += 1
    blocks = (*message.blocks[:at], block, *message.blocks[at:])
    return Message(message.role, blocks, form, message.raw, message.meta)


def _check(conversation: Conversation, rewritten: int) -> None:
    for problem in validate(conversation, rewritten=rewritten):
        if problem.index is not None and problem.index < rewritten:
            raise InvalidConversation(f"the handoff's marker would break a rule: {problem}")


__all__ = [
    "TAG",
    "Marked",
    "Placed",
    "insert",
    "mark",
    "marker_text",
    "notes_hold_ledger",
    "page_line",
    "removed_tokens",
]
