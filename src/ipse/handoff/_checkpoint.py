"""Recording a checkpoint: the agent's ``micro_handoff`` notes, stored in the archive by session.

The notes are checked against `SCHEMA` (`check_notes`), rendered (`render_notes`), and stored as
one archive item of kind ``checkpoint`` whose id is a hash of the session and the notes: the same
notes recorded twice are one item, and a checkpoint's id is stable across processes. The call is
stored as an Anthropic ``tool_use`` block holding the notes, the result as the rendered text, so
``ipse recall`` gives a checkpoint back like any other archived item.

When the conversation the checkpoint was called from is at hand (a Claude Code session file, a
proxy's last request), `record_checkpoint` also says what the next request will drop: the tool
calls, results and thinking blocks before the checkpoint call and their tokens, measured by
running `strip` at the call exactly as the handoff will and counting them with
`ipse.handoff.tokens_saved`, the count the proxy's log line and record quote. And it appends
the ledger of what they did (`ipse.handoff._ledger`: files changed and read, commands, where,
what failed, each with the id `recall` takes) to the notes, after the agent's own words and
labelled as derived: the answer the agent sees carries it, and the handoff at this checkpoint
finds it there and adds no marker of its own. Without the conversation the drop is unknown
(None) and the notes carry no ledger (the handoff's marker brings it then).

`checkpoint_items` gives back what the handoffs of a checkpoint's session removed. Not only the
items of that one checkpoint: the positions a harness transcript gives (where the MCP server
measures) and those of the wire request (where the proxy archives) count messages differently
(Claude Code's requests carry system messages its transcript does not), so a split by position
could leave an item out; listing the session's items never does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ipse import jsonio
from ipse.errors import InputError
from ipse.handoff._cut import CHECKPOINT_TOOL, results_by_call
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS, derive
from ipse.handoff._measure import tokens_saved
from ipse.handoff._notes import check_notes, render_notes
from ipse.handoff._recognise import checkpoint_tool_of
from ipse.handoff._strip import StripOptions, strip
from ipse.transcript import Conversation, Thinking, ToolCall, ToolResult

if TYPE_CHECKING:
    from ipse.archive._shared import ArchiveStore, Item

CHECKPOINT_KIND = "checkpoint"


@dataclass(frozen=True, slots=True)
class Drop:
    """What the next request drops at a checkpoint: counts and the tokens they held."""

    tool_calls: int
    tool_results: int
    thinking_blocks: int
    tokens: int
    tokens_before: int

    def to_json(self) -> dict[str, int]:
        return {
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "thinking_blocks": self.thinking_blocks,
            "tokens": self.tokens,
            "tokens_before": self.tokens_before,
        }


@dataclass(frozen=True, slots=True)
class _Stored:
    """The archive's view of a checkpoint (`ipse.archive.Archivable`)."""

    kind: str
    id: str
    tool: str
    call: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    message: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """A recorded checkpoint: its id, session, rendered notes, and the drop when known."""

    id: str
    session: str
    text: str
    stored: bool  # False when the same notes were already recorded for this session
    drop: Drop | None
    position: int  # message index of the checkpoint call; -1 when unknown
    ledger: str = ""  # the ledger appended to the notes ("" without the conversation)

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": self.id,
            "session": self.session,
            "stored": self.stored,
            "notes": self.text,
            "ledger": self.ledger or None,
            "next_request_drops": self.drop.to_json() if self.drop else None,
        }


def checkpoint_id(session: str, notes: Mapping[str, Any]) -> str:
    """The stable id of these notes in this session: ``checkpoint-`` and 16 hex digits."""
    body = jsonio.dumps(dict(notes), option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(session.encode("utf-8") + b"\0" + body)
    return "checkpoint-" + digest.hexdigest()[:16]


def record_checkpoint(
    notes: Any,
    *,
    session: str,
    archive: ArchiveStore,
    conversation: Conversation | None = None,
    tool: str = CHECKPOINT_TOOL,
) -> Checkpoint:
    """Check and store the notes under ``session``; measure the drop from ``conversation``.

    `InputError` (naming the first bad field) for notes that do not follow the schema; nothing
    is stored then."""
    if not session:
        raise InputError("checkpoint: the session is empty")
    checked = check_notes(notes)
    drop, position, ledger = (
        _drop(conversation, tool) if conversation is not None else (None, -1, "")
    )
    text = render_notes(checked) + (f"\n\n{ledger}" if ledger else "")
    cid = checkpoint_id(session, checked)
    item = _Stored(
        kind=CHECKPOINT_KIND,
        id=cid,
        tool=tool,
        call={"type": "tool_use", "id": cid, "name": tool, "input": dict(checked)},
        result={"type": "text", "text": text},
        message=position,
    )
    added = archive.put(session, [item], "checkpoint")
    return Checkpoint(
        id=cid,
        session=session,
        text=text,
        stored=added > 0,
        drop=drop,
        position=position,
        ledger=ledger,
    )


def _drop(conversation: Conversation, tool: str) -> tuple[Drop | None, int, str]:
    """Strip at the last checkpoint call, or, when the harness has not written the call yet,
    at its end (all but an unfinished tool exchange): the call comes next. The drop, the
    call's position and the ledger of what it drops; (None, -1, "") when the conversation is
    empty or cannot be handed off."""
    from ipse._tokens import default_counter
    from ipse.errors import IpseError
    from ipse.transcript._shared import TokenTally

    found: ToolCall | None = None
    position = len(conversation.messages)
    answers = results_by_call(conversation.messages)
    for index, message in enumerate(conversation.messages):
        for block in message.blocks:
            if isinstance(block, ToolCall) and checkpoint_tool_of(
                block, (tool,), answers.get(block.id)
            ):
                found, position = block, index
    if not conversation.messages:
        return None, -1, ""
    answered = conversation if found is None else _answered(conversation, found.id)
    try:
        if found is None:
            after, report = strip(conversation, "now")
        else:
            after, report = strip(answered, "checkpoint", StripOptions(checkpoint_tool=tool))
    except IpseError:
        return None, -1, ""
    tally = TokenTally(default_counter())
    removed_ids = {r.id for r in report.removed}
    calls = results = thinking = 0
    for message in conversation.messages[: report.cut]:
        for block in message.blocks:
            if isinstance(block, ToolCall) and block.id in removed_ids:
                calls += 1
            elif isinstance(block, ToolResult) and block.call_id in removed_ids:
                results += 1
            elif isinstance(block, Thinking):
                thinking += 1
    # the one count of a saving (the proxy's log line and record quote it for the same cut)
    tokens = tokens_saved(answered, after, tally)
    whole = tally.fresh()
    whole.add_messages(answered.messages)
    removed = {r.id for r in report.removed if r.kind != "thinking"}
    ledger = derive(answered.messages[: report.cut], removed, answered.system)
    text = ledger.text(DEFAULT_LEDGER_TOKENS, tally.count).text if removed else ""
    return Drop(calls, results, thinking, tokens, whole.total), position, text


def _answered(conversation: Conversation, call_id: str) -> Conversation:
    """The conversation as the next request will carry it: the checkpoint call answered (the
    cut then falls after its result, as a handoff at the checkpoint places it)."""
    from ipse.transcript import write
    from ipse.transcript._shared import codec

    last = conversation.messages[-1]
    calls = [b for b in last.blocks if isinstance(b, ToolCall) and b.id == call_id]
    if last.role != "assistant" or not calls:
        return conversation
    dialect = codec(conversation.dialect)
    body = write(conversation)
    history = body.get(dialect.history_key)
    answer = dialect.raw_answer(calls[-1], "Checkpoint recorded.")
    body[dialect.history_key] = [*(history if isinstance(history, list) else []), answer]
    return dialect.read_body(body)


def checkpoint_items(archive: ArchiveStore, checkpoint: str) -> tuple[Item, list[Item]]:
    """A checkpoint's archive row and the items its session's handoffs removed, in order.

    `InputError` when no checkpoint has that id."""
    found = archive.recall(checkpoint)
    if found.item.kind != CHECKPOINT_KIND:
        raise InputError(f"{checkpoint!r} is an archived {found.item.kind}, not a checkpoint")
    items = archive.items(found.item.session)
    return found.item, [i for i in items if i.kind != CHECKPOINT_KIND]


__all__ = [
    "CHECKPOINT_KIND",
    "Checkpoint",
    "Drop",
    "checkpoint_id",
    "checkpoint_items",
    "record_checkpoint",
]
