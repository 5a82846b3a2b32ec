"""The micro-handoff transform: strip tool traffic and thinking before a cut, keep every word.

`strip` is pure (a `Conversation` in, a `Conversation` and a `HandoffReport` out), deterministic,
and idempotent: stripping a stripped conversation changes nothing, so a proxy that re-strips every
later request sends the same rewritten prefix each time and the provider's prompt cache keeps
hitting.

Before the cut it removes tool calls, tool results, thinking and redacted thinking, and
server-tool blocks, except the checkpoint tool's calls and results (the handoff notes, this one
and earlier ones); keeps every non-empty text block byte for byte, and the images and documents
the human supplied (those inside tool results go with the result); drops messages left empty;
merges neighbouring messages of one role where the dialect requires the roles to alternate
(Anthropic, Chat Completions; a Responses body keeps every item as its own), counted in the
report; in a message it changed (and only there), joins neighbouring text blocks with a blank
line (``join_texts``; alternating dialects only: a Responses body keeps its parts); moves
a prompt-cache breakpoint on a removed or joined block to the nearest kept block at or before it
(`ipse.handoff._breakpoints`). When
the cut falls inside an agent's turn, the one tool exchange right before it stays, so the roles
still alternate without touching anything after the cut. After the cut nothing changes.

Input that breaks the provider's rules in a way stripping cannot repair (a tool result without
its call after the cut, an unknown role in the rewritten part, ...) raises `InvalidConversation`;
a tool result without its call before the cut (the input starts mid-exchange) is removed and
archived like every other result; so does an
output that `validate` rejects (that would be a bug).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ipse import jsonio
from ipse.errors import InvalidConversation
from ipse.handoff._breakpoints import marker, place
from ipse.handoff._cut import CHECKPOINT_TOOL, At, resolve_cut, results_by_call, settle
from ipse.handoff._recognise import checkpoint_tool_of
from ipse.handoff._report import HandoffReport, Removed
from ipse.handoff._validate import Problem, ProblemCode, validate
from ipse.transcript import Conversation, Message, Other, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import Block, Codec, Origin, codec

SEPARATOR = "\n\n"

# Problems in the rewritten part that stripping repairs by construction.
REPAIRABLE: frozenset[ProblemCode] = frozenset(
    {
        "roles_not_alternating",
        "empty_content",
        "empty_text",
        "unanswered_call",
        "misplaced_result",
        "result_not_first",
        "thinking_in_rewritten",
    }
)
# Problems that make the input unusable wherever they are.
FATAL_ANYWHERE: frozenset[ProblemCode] = frozenset({"no_messages", "duplicate_call_id"})
# A tool result whose call is not in the input (a session continued from another, a fixture cut
# mid-exchange) is removed and archived with the rest of the tool traffic before the cut; after
# the cut it would be sent as it is, and the provider refuses it.
ORPHAN: ProblemCode = "orphan_result"
ORPHAN_TOOL = "(call not in the input)"  # the tool name an orphan result is archived under
CONTINUED = "[continued from an earlier part of this session]"


@dataclass(frozen=True, slots=True)
class StripOptions:
    """How to strip: the checkpoint tool's name, text joining, and the two optional keeps."""

    checkpoint_tool: str = CHECKPOINT_TOOL
    join_texts: bool = True  # join neighbouring text blocks with a blank line
    promote_thinking: bool = False  # keep the text of thinking blocks as agent text
    breadcrumbs: bool = False  # one short line per removed call
    breadcrumb_width: int = 60
    # Remove (and archive) tool results before the cut whose call is not in the input, as in a
    # session continued from another; off, such an input is refused (a wire-level rewrite
    # forwards an invalid request untouched rather than repair it).
    drop_orphans: bool = True


def strip(
    conversation: Conversation,
    at: At = None,
    options: StripOptions | None = None,
    *,
    page: Collection[int] = (),
) -> tuple[Conversation, HandoffReport]:
    """The conversation with tool traffic and thinking removed before the cut, and a report.

    ``page``: indices of agent messages before the cut whose text is moved out too (a handoff
    under a budget archives it as one item, `ipse.handoff._budget`); the report lists it."""
    opts = options or StripOptions()
    messages = conversation.messages
    if not messages:
        raise InvalidConversation("the conversation has no messages")
    point = resolve_cut(conversation, at, opts.checkpoint_tool)
    cut = settle(messages, point.index)
    input_problems = validate(conversation)
    _check_input(input_problems, cut, opts.drop_orphans)
    dialect = codec(conversation.dialect)
    keep = _checkpoint_calls(messages[:cut], opts.checkpoint_tool, dialect)
    while True:
        built = _Builder(dialect, keep, opts, frozenset(page)).build(messages[:cut])
        tail = messages[cut:]
        if not (
            (dialect.alternates or dialect.merges_turns)
            and built.messages
            and tail
            and _same_side(built.messages[-1], tail[0])
        ):
            break
        # Alternating dialects keep the boundary's tool exchange; a dialect that only merges
        # adjacent turns on reading moves the cut back instead.
        extra = (
            _boundary_exchange(messages, cut, dialect) - keep if dialect.alternates else frozenset()
        )
        if extra:
            keep = keep | extra
        else:
            cut = settle(messages, cut - 1)
    output = replace(conversation, messages=(*built.messages, *tail))
    rewritten = len(built.messages)
    if _opener(messages) == "user" and _opener(output.messages) not in ("user", None):
        raise InvalidConversation(
            "stripping would leave no user message to open the request: the opening user "
            "message holds nothing but blank text and tool results [first_not_user]"
        )
    carried = _check_output(output, rewritten, input_problems, cut)
    report = HandoffReport(
        cut=cut,
        requested_cut=point.index,
        cut_kind=point.kind,
        checkpoint_id=point.checkpoint_id,
        rewritten_out=rewritten,
        removed=tuple(built.removed),
        kept_calls=tuple(sorted(keep)),
        breadcrumbs=tuple(built.breadcrumbs),
        promoted=tuple(built.promoted),
        dropped_empty_texts=built.dropped_empty,
        merged_messages=built.merged,
        carried_problems=carried,
        paged=_grouped(built.paged),
    )
    return output, report


def _grouped(paged: Sequence[tuple[int, str]]) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Paged texts by message, in order."""
    out: dict[int, list[str]] = {}
    for index, text in paged:
        out.setdefault(index, []).append(text)
    return tuple((index, tuple(texts)) for index, texts in out.items())


# ------------------------------------------------------------------------------ input checks


def _opener(messages: Sequence[Message]) -> str | None:
    """The role of the first message that is not a system or developer instruction."""
    return next((m.role for m in messages if m.role not in ("system", "developer")), None)


def _check_input(problems: Sequence[Problem], cut: int, drop_orphans: bool = True) -> None:
    for problem in problems:
        in_prefix = problem.index is not None and problem.index < cut
        if problem.code == ORPHAN:
            if not (in_prefix and drop_orphans):
                raise InvalidConversation(f"a tool result has no call in the input: {problem}")
            continue
        if problem.code in FATAL_ANYWHERE or (in_prefix and problem.code not in REPAIRABLE):
            raise InvalidConversation(f"the conversation is invalid before stripping: {problem}")


def _check_output(
    output: Conversation, rewritten: int, input_problems: Sequence[Problem], cut: int
) -> tuple[Problem, ...]:
    """Validate the output; return the problems of the untouched part (all already in the input)."""
    shift = rewritten - cut
    before = {(p.code, p.index) for p in input_problems if p.index is not None and p.index >= cut}
    carried: list[Problem] = []
    for problem in validate(output, rewritten=rewritten):
        in_tail = problem.index is not None and problem.index >= rewritten
        if not in_tail or (problem.code, problem.index - shift) not in before:  # type: ignore[operator]
            raise InvalidConversation(f"stripping would give an invalid request: {problem}")
        carried.append(problem)
    return tuple(carried)


# ------------------------------------------------------------------------------ which calls stay


def _answered_pairs(messages: Sequence[Message], dialect: Codec) -> dict[str, int]:
    """Call id -> message index, for calls answered right after their message."""
    out: dict[str, int] = {}
    for i, message in enumerate(messages):
        calls = [b.id for b in message.blocks if isinstance(b, ToolCall)]
        if not calls:
            continue
        answered: set[str] = set()
        j = i + 1
        while j < len(messages):
            answered.update(b.call_id for b in messages[j].blocks if isinstance(b, ToolResult))
            if dialect.result_role is None or messages[j].role != dialect.result_role:
                break
            j += 1
        out.update((cid, i) for cid in calls if cid in answered)
    return out


def _checkpoint_calls(messages: Sequence[Message], tool: str, dialect: Codec) -> frozenset[str]:
    answered = _answered_pairs(messages, dialect)
    results = results_by_call(messages)
    return frozenset(
        b.id
        for m in messages
        for b in m.blocks
        if isinstance(b, ToolCall)
        and b.id in answered
        and checkpoint_tool_of(b, (tool,), results.get(b.id))
    )


def _boundary_exchange(messages: Sequence[Message], cut: int, dialect: Codec) -> frozenset[str]:
    """The answered calls of the last assistant message before ``cut``, if only results follow."""
    for a in range(cut - 1, -1, -1):
        message = messages[a]
        if message.role == "assistant":
            if not any(isinstance(b, ToolCall) for b in message.blocks):
                return frozenset()
            answered = _answered_pairs(messages[a:cut], dialect)
            return frozenset(
                b.id for b in message.blocks if isinstance(b, ToolCall) and b.id in answered
            )
        if not message.blocks or not all(isinstance(b, ToolResult) for b in message.blocks):
            return frozenset()
    return frozenset()


def _last_turn(messages: Sequence[Message]) -> int:
    """The index of the newest message that is not a system message (-1: none)."""
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role != "system"), -1)


def _same_side(last: Message, first: Message) -> bool:
    return last.role == first.role and last.role in ("user", "assistant")


# ----------------------------------------------------------------------------- the rewrite


class _Built:
    """What a rewrite of a prefix made: its messages and what it removed, paged and added."""

    __slots__ = (
        "breadcrumbs",
        "dropped_empty",
        "merged",
        "messages",
        "paged",
        "promoted",
        "removed",
    )

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.removed: list[Removed] = []
        self.breadcrumbs: list[str] = []
        self.promoted: list[str] = []
        self.dropped_empty = 0
        self.merged = 0
        self.paged: list[tuple[int, str]] = []  # (message index, text)


class _Builder:
    """Rewrites a prefix: filter blocks, drop empty messages, merge roles, join texts."""

    def __init__(
        self,
        dialect: Codec,
        keep: frozenset[str],
        options: StripOptions,
        page: frozenset[int] = frozenset(),
    ) -> None:
        self.calls: set[str] = set()
        self.page = page
        self.paging = False  # the message being filtered is paged out
        self.dialect = dialect
        self.keep = keep
        self.options = options
        self.key = dialect.breakpoint_key
        # each breakpoint of the prefix, in order, with the output block it belongs at
        self.anchors: list[tuple[Block | None, Any]] = []
        self.last: Block | None = None  # the newest output block so far
        self.joined: dict[int, Block] = {}  # id of a text joined into another -> that block

    def build(self, prefix: Sequence[Message]) -> _Built:
        results = self._results(prefix)
        self.calls = {b.id for m in prefix for b in m.blocks if isinstance(b, ToolCall)}
        out = _Built()
        changed: list[bool] = []  # per output message: it lost a block or was merged
        for index, message in enumerate(prefix):
            blocks = self._filter(index, message, results, out)
            if blocks is None:
                self._append(out, changed, message, lost=False)
            elif blocks:
                self._append(out, changed, self._rebuilt(message, blocks), lost=True)
        return self._finished(out, changed, prefix)

    def _append(self, out: _Built, changed: list[bool], kept: Message, *, lost: bool) -> None:
        """Add a kept message; where the API wants the roles to alternate (a mid-conversation
        system message takes no part), merge it into the last turn of its side: the one change
        to a message that lost nothing (counted in the report); elsewhere every kept message
        stays its own. System messages between the two stay in their order, before it."""
        last = _last_turn(out.messages)
        if self.dialect.alternates and last >= 0 and _same_side(out.messages[last], kept):
            kept = self._merged(out.messages[last], kept)
            between, marks = out.messages[last + 1 :], changed[last + 1 :]
            del out.messages[last:], changed[last:]
            out.messages.extend(between)
            changed.extend(marks)
            out.merged += 1
            lost = True
        out.messages.append(kept)
        changed.append(lost)

    def _finished(self, out: _Built, changed: list[bool], prefix: Sequence[Message]) -> _Built:
        """Join texts in the messages the handoff changed, open with the user, place the
        prompt-cache breakpoints."""
        if self.options.join_texts and self.dialect.alternates:
            # only in a message the handoff changed: one it left whole stays as it was written
            out.messages = [
                self._joined(m) if lost else m
                for m, lost in zip(out.messages, changed, strict=True)
            ]
        if out.messages and out.messages[0].role != "user" and prefix[0].role == "user":
            # Only tool results opened the input (it starts mid-exchange): a request still
            # opens with the user, so one harness line says where the conversation came from.
            opener = Message("user", (Text(CONTINUED, Origin.HARNESS),), "string")
            out.messages.insert(0, opener)
            self.anchors = [(a or opener.blocks[0], m) for a, m in self.anchors]
        if self.key is not None and self.anchors:
            out.messages = place(out.messages, self.anchors, self.joined, self.key)
        return out

    def _results(self, prefix: Sequence[Message]) -> dict[str, Mapping[str, Any]]:
        found: dict[str, Mapping[str, Any]] = {}
        for message in prefix:
            for block in message.blocks:
                if isinstance(block, ToolResult):
                    found.setdefault(block.call_id, self.dialect.result_raw(message, block))
                elif self.dialect.is_server_result(block):
                    raw = block.raw or {}
                    found.setdefault(str(raw.get("tool_use_id", "")), raw)
        return found

    def _filter(
        self,
        index: int,
        message: Message,
        results: Mapping[str, Mapping[str, Any]],
        out: _Built,
    ) -> list[Block] | None:
        """The blocks that stay; None when every block stays as it was. A message sent with no
        content at all stays as nothing (one of the REPAIRABLE problems); an empty list of
        blocks is the harness's own (Claude Code's settings-only ``system`` message) and stays."""
        if not message.blocks and message.content_form == "none":
            return []
        kept: list[Block] = []
        changed = False
        self.paging = index in self.page and message.role == "assistant"
        for block in message.blocks:
            stays = self._block(block, index, results, out)
            changed = changed or stays is None or len(stays) != 1 or stays[0] is not block
            kept.extend(stays or ())
            if self.key is not None:
                mark = marker(block, self.key, nested=not stays)
                if stays:
                    self.last = stays[-1]
                if mark is not None:
                    self.anchors.append((self.last, mark))
        return kept if changed else None

    def _block(
        self, block: Block, index: int, results: Mapping[str, Mapping[str, Any]], out: _Built
    ) -> list[Block] | None:
        """What one block becomes: itself, a replacement, or nothing (None: removed)."""
        if isinstance(block, Text):
            return self._text(block, index, out)
        if isinstance(block, ToolCall):
            return self._call(block, index, results, out)
        if isinstance(block, ToolResult):
            if block.call_id in self.keep:
                return [block]
            if block.call_id not in self.calls:  # its call is not in the input: archive it alone
                raw = results.get(block.call_id)
                call = {"id": block.call_id, "missing": ORPHAN_TOOL}  # stands for the absent call
                out.removed.append(Removed("tool", block.call_id, ORPHAN_TOOL, call, raw, index))
            return None
        if isinstance(block, Thinking):
            return self._thinking(block, index, out)
        if block.type in self.dialect.server_tool_types:
            out.removed.append(_server_removed(block, index, results))
            return None
        if self.dialect.is_server_result(block):
            return None
        return [block]

    def _text(self, block: Text, index: int, out: _Built) -> list[Block] | None:
        blank = not block.text.strip()
        if block.text == "" or (blank and (self.dialect.rejects_blank_text or self.paging)):
            out.dropped_empty += 1
            return None
        if self.paging:
            out.paged.append((index, block.text))
            return None
        return [block]

    def _call(
        self, block: ToolCall, index: int, results: Mapping[str, Mapping[str, Any]], out: _Built
    ) -> list[Block] | None:
        if block.id in self.keep:
            return [block]
        raw = block.raw if block.raw is not None else self.dialect.write_block(block)
        out.removed.append(Removed("tool", block.id, block.name, raw, results.get(block.id), index))
        if not self.options.breadcrumbs:
            return None
        line = breadcrumb(block, self.options.breadcrumb_width)
        out.breadcrumbs.append(line)
        return [Text(line, Origin.HARNESS)]

    def _thinking(self, block: Thinking, index: int, out: _Built) -> list[Block] | None:
        raw = block.raw if block.raw is not None else self.dialect.write_block(block)
        out.removed.append(_thinking_removed(raw, index))
        # promoted as agent text, unless it would be a text block the provider refuses (a
        # thinking of nothing but whitespace, for Anthropic): then it is only archived
        blank = block.text == "" or (self.dialect.rejects_blank_text and not block.text.strip())
        if self.options.promote_thinking and not blank and not self.paging:
            out.promoted.append(block.text)
            return [Text(block.text, Origin.AGENT)]
        return None

    def _rebuilt(self, message: Message, blocks: list[Block]) -> Message:
        raw = self.dialect.stripped_raw(message, blocks)
        return Message(message.role, tuple(blocks), message.content_form, raw, message.meta)

    def _merged(self, first: Message, second: Message) -> Message:
        form = self.dialect.merged_form(first.content_form, second.content_form)
        return Message(first.role, first.blocks + second.blocks, form, first.raw, first.meta)

    def _joined(self, message: Message) -> Message:
        blocks: list[Block] = []
        run: list[Text] = []
        changed = False

        def flush() -> None:
            nonlocal changed
            if len(run) == 1:
                blocks.append(run[0])
            elif run:
                changed = True
                joined = Text(SEPARATOR.join(t.text for t in run), run[0].origin)
                self.joined.update((id(t), joined) for t in run)
                blocks.append(joined)
            run.clear()

        for block in message.blocks:
            if isinstance(block, Text):
                run.append(block)
            else:
                flush()
                blocks.append(block)
        flush()
        if not changed:
            return message
        return replace(message, blocks=tuple(blocks))


def _server_removed(block: Other, index: int, results: Mapping[str, Mapping[str, Any]]) -> Removed:
    raw = block.raw or {"type": block.type}
    call_id = str(raw.get("id", ""))
    name = str(raw.get("name", block.type))
    return Removed("server_tool", call_id, name, raw, results.get(call_id), index)


def _thinking_removed(raw: Mapping[str, Any], index: int) -> Removed:
    digest = hashlib.sha256(jsonio.dumps(raw)).hexdigest()[:16]
    return Removed("thinking", f"thinking-{digest}", "thinking", raw, None, index)


def breadcrumb(call: ToolCall, width: int = 60) -> str:
    """One short line for a removed call: tool name, a clipped argument, and the id ``recall``
    gives the call and its result back by (the id it is archived under)."""
    argument = _first_argument(call.input)
    flat = " ".join(argument.split())
    if len(flat) > width:
        flat = flat[: max(width - 1, 0)] + "…"
    said = f"{call.name}: {flat}" if flat else call.name
    return f"[{said}; recall {call.id}]" if call.id else f"[{said}]"


def _first_argument(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for item in value.values():
            if isinstance(item, str) and item.strip():
                return item
        return jsonio.dumps(value).decode() if value else ""
    if value is None:
        return ""
    return jsonio.dumps(value, default=str).decode()


__all__ = ["REPAIRABLE", "SEPARATOR", "StripOptions", "breadcrumb", "strip"]
