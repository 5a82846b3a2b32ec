"""Claude Code session files (JSONL): the record tree, its threads, and their conversations.

A session file is a tree, not a list. Each record names its parent in ``parentUuid``; a rewind,
an edited message or a retry leaves an abandoned branch behind. A thread's conversation is the
path from its last record back to its root. A ``compact_boundary`` record starts a new root and
points back across the compaction with ``logicalParentUuid`` (when that record is in the file):
the path is cut there into segments, and the last segment is what the model saw last (the
walks over the tree: `ipse.transcript._formats.claude_code_tree`).

Threads: ``main`` (records without ``isSidechain``), one per inline sidechain root (older
versions write subagents inline with ``isSidechain: true``; named ``sidechain-1``, ``-2``, ... in
order of appearance), and one per file in the ``subagents/`` folder beside the session (named by
the file's stem, e.g. ``agent-a2898e3``).

Message and progress records are read as the fields the threads are built from
(`RECORD_FIELDS`): the structured copies of tool results and the payloads of progress records,
a third to a half of a session's bytes, are never built. Records of other kinds are read whole.

Records become messages like this: records that are not messages (progress, snapshots, queue
operations, system records) are skipped; the ``assistant`` records that share ``message.id`` (one
content block each) are merged into one message, as long as nothing but tool results came
between them (a reused id in a later turn starts a new message); consecutive ``user`` records
holding only tool results are merged into one message, as the harness sends them. A tool result
whose call is not in the file (a session continued from another, a fixture cut mid-exchange) is
kept and reported once in the warnings; a handoff removes it with the rest of the tool traffic
before the cut.

Only the live path makes the conversation: the records of an abandoned branch (a rewind, an
edit, a retry) never join it, even when they repeat a response's ``message.id``; a parallel
call's records join it only when they hang off the path, and a call whose id is already there
is a copy, not a sibling.
"""

from __future__ import annotations

import bisect
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipse import _progress as progress
from ipse.errors import InputError, UsageError
from ipse.fileio import read_lines
from ipse.jsonio import is_object
from ipse.transcript._formats.anthropic import read_message
from ipse.transcript._formats.claude_code_stored import Digest, StoredContent, StoredFile, notes_of
from ipse.transcript._formats.claude_code_tree import (
    JOURNAL_TYPES,
    MESSAGE_TYPES,
    SessionRecord,
    is_boundary,
    live_segments,
    members,
    record_id,
)
from ipse.transcript._jsonl import FieldsDecoder, check_text_head
from ipse.transcript._links import meta_position, orphan_results
from ipse.transcript._model import (
    Block,
    Conversation,
    Message,
    Origin,
    Text,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from ipse.transcript._thread import Thread

MAIN = "main"


@dataclass
class ClaudeCodeSession:
    """A parsed session file: its records, and its threads on demand."""

    path: Path
    records: list[SessionRecord]
    subagent_files: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skip_bad_lines: bool = False
    # each message record's blocks digested as read and dropped (`read_session`)
    digest: Digest | None = None

    @property
    def session_id(self) -> str | None:
        for record in self.records:
            value = record.data.get("sessionId")
            if isinstance(value, str):
                return value
        return None

    @property
    def summaries(self) -> list[str]:
        return [
            str(r.data.get("summary"))
            for r in self.records
            if r.kind == "summary" and r.data.get("summary")
        ]

    def thread_names(self) -> list[str]:
        names = [MAIN]
        if self._has_main_messages():
            names.extend(f"sidechain-{i}" for i in range(1, len(self._sidechain_roots()) + 1))
        names.extend(sorted(self.subagent_files))
        return names

    def thread(self, name: str = MAIN) -> Thread:
        """One thread by name (``main``, ``sidechain-N``, or a subagent file's stem)."""
        label = f"building the {name} thread"
        progress.update(label, 0, 1)  # a large session takes seconds between read and replay
        built = self._thread(name)
        progress.update(label, 1, 1)
        return built

    def _thread(self, name: str) -> Thread:
        if self.digest is not None:  # the blocks were dropped as they were read: read again
            again = ClaudeCodeSession(
                self.path,
                _read_records(self.path, self.skip_bad_lines, []),
                self.subagent_files,
                self.warnings,
                self.skip_bad_lines,
            )
            return again._thread(name)
        found, records, path = self.thread_records(name)
        return _build_thread(found, records, path, self.warnings)

    def thread_records(self, name: str = MAIN) -> tuple[str, list[SessionRecord], Path]:
        """The records a thread is built from: its name as found (a subagent named by its
        stem alone is ``agent-<stem>``), its records in file order, and the file holding them."""
        if name == MAIN:
            records = [r for r in self.records if not r.sidechain]
            if not any(r.kind in MESSAGE_TYPES for r in records):
                records = self.records  # a subagent's own file: its sidechain is its thread
            return name, records, self.path
        if name.startswith("sidechain-"):
            roots = self._sidechain_roots()
            try:
                number = int(name.removeprefix("sidechain-"))
                root = roots[number - 1]
            except (ValueError, IndexError):
                raise self._unknown_thread(name) from None
            return name, self._sidechains()[root], self.path
        candidates = [name, f"agent-{name}"]
        for candidate in candidates:
            if candidate in self.subagent_files:
                sub = self.subagent_files[candidate]
                records = _read_records(sub, self.skip_bad_lines, self.warnings, self.digest)
                return candidate, records, sub
        raise self._unknown_thread(name)

    def _unknown_thread(self, name: str) -> UsageError:
        return UsageError(
            f"{self.path}: no thread named {name!r}; threads: {', '.join(self.thread_names())}"
        )

    def _has_main_messages(self) -> bool:
        return any(r.kind in MESSAGE_TYPES and not r.sidechain for r in self.records)

    def _sidechain_records(self) -> list[SessionRecord]:
        return [r for r in self.records if r.sidechain]

    def _sidechains(self) -> dict[str, list[SessionRecord]]:
        """Each sidechain root's records in file order, found in one pass over the records
        and kept (a session with many sub-agent runs asks once per run)."""
        key = (id(self.records), len(self.records))
        kept = self.__dict__.get("_sidechains_of")
        if kept is None or kept[0] != key:
            kept = (key, members(self._sidechain_records(), self._sidechain_roots()))
            self.__dict__["_sidechains_of"] = kept
        return kept[1]

    def _sidechain_roots(self) -> list[str]:
        records = self._sidechain_records()
        uuids = {record_id(r.uuid) for r in records}
        roots: list[str] = []
        for record in records:
            parent = record_id(record.parent)
            uuid = record.uuid
            if isinstance(uuid, str) and (parent is None or parent not in uuids):
                roots.append(uuid)
        return roots


def read_session(
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    warnings: list[str] | None = None,
    digest: Digest | None = None,
) -> ClaudeCodeSession:
    """Parse a Claude Code session file (and find its ``subagents/`` folder, if any).

    With ``digest``, each message record keeps its content as notes (`StoredContent`), each
    block given to ``digest`` as its line is read and then dropped, and a progress record
    only its place in the tree: the request messages of its threads read their content back
    from the file when asked for it, and a thread built through the neutral model reads the
    file again whole."""
    p = Path(path)
    sink = warnings if warnings is not None else []
    records = _read_records(p, skip_bad_lines, sink, digest)
    if not records:
        raise InputError("no records in the session file", path=p)
    folder = p.with_suffix("") / "subagents"
    subagents: dict[str, Path] = {}
    if folder.is_dir():
        subagents = {f.stem: f for f in sorted(folder.glob("*.jsonl"))}
    return ClaudeCodeSession(p, records, subagents, sink, skip_bad_lines, digest)


# What a reader uses of a message record (its place in the tree, what the session says of
# itself, the message and what its meta keeps: `record_meta`) and of a progress record (its
# place in the tree, what the session says of itself). Such records are read as these fields
# alone (an absent one as None): the rest (``toolUseResult``, a structured copy of a tool result
# the message already holds; a progress record's payload, hook and tool progress, often with
# whole messages) is never built.
_TREE_FIELDS = ("uuid", "parentUuid", "isSidechain", "subtype", "sessionId", "version")
_MESSAGE_FIELDS = (
    *_TREE_FIELDS,
    "timestamp",
    "message",
    "isMeta",
    "isCompactSummary",
    "requestId",
    "requestRef",
)
RECORD_FIELDS = {"user": _MESSAGE_FIELDS, "assistant": _MESSAGE_FIELDS, "progress": _TREE_FIELDS}
# Read with a digest (for the request messages of its threads, `read_session`), a progress
# record is its place in the tree: most of a long session's records, each kept to the end.
_DIGESTED_FIELDS = {**RECORD_FIELDS, "progress": ("uuid", "parentUuid", "isSidechain")}


def _read_records(
    path: Path, skip_bad_lines: bool, warnings: list[str] | None, digest: Digest | None = None
) -> list[SessionRecord]:
    """A session file's records: message and progress records as their `RECORD_FIELDS`,
    the others whole (`read_jsonl_fields`, each record made as it is decoded). A record cut
    to its fields keeps the decoded struct as its data (a read-only mapping: `FieldsView`).
    With ``digest``, a message record's content becomes its `StoredContent` (`read_session`),
    its blocks dropped until the file's first journaled request (`JOURNAL_TYPES`): a journal
    resolves its requests' messages from the session's own, so from there on they are kept."""
    check_text_head(path)
    kinds = RECORD_FIELDS if digest is None else _DIGESTED_FIELDS
    fields = FieldsDecoder(kinds)
    decode, errors, kind_of = fields.decode, fields.errors, fields.kind_of
    with_message = {t for t, kind in kind_of.items() if "message" in kinds[kind]}
    source = None if digest is None else StoredFile(path, _message_reader(fields, path), digest)
    out: list[SessionRecord] = []
    append = out.append
    end = 0
    keep = False  # (the content kept: a journaled request came before)
    for number, line in enumerate(read_lines(path, newlines=True), start=1):
        at, end = end, end + len(line)
        if not line or line.isspace():
            continue
        try:
            struct = decode(line)
        except errors:
            whole = fields.whole(line, path, number, skip_bad_lines, warnings)
            if whole is not None:
                record = session_record(number, whole)
                keep = keep or record.kind in JOURNAL_TYPES
                if source is not None and record.kind in MESSAGE_TYPES:
                    _store(record.message, source, at, len(line), number, keep)
                append(record)
            continue
        cut = type(struct)
        message = struct.message if cut in with_message else None
        if source is not None and type(message) is dict:
            _store(message, source, at, len(line), number, keep)
        sidechain = bool(struct.isSidechain)
        append(
            SessionRecord(
                number, struct, kind_of[cut], struct.uuid, struct.parentUuid, sidechain, message
            )
        )
    return out


def _store(
    message: Any, source: StoredFile, at: int, size: int, line: int, keep: bool = False
) -> None:
    """Replace a message record's content by its `StoredContent` (its blocks digested; the
    content ``keep``, else where to read it back)."""
    if type(message) is not dict:
        return
    content = message.get("content")
    form, notes, plain = notes_of(content, source.digest)
    if keep:
        message["content"] = StoredContent(form, notes, plain, content)
    else:
        message["content"] = StoredContent(form, notes, plain, None, source, at, size, line)


def _message_reader(fields: FieldsDecoder, path: Path) -> Callable[[bytes, int], Any]:
    """How a message record's line read again gives its message, as `_read_records` read it
    (None: not a message record's line)."""

    def message(line: bytes, number: int) -> Any:
        try:
            struct = fields.decode(line)
        except fields.errors:
            whole = fields.whole(line, path, number, False, None)
            return whole.get("message") if whole is not None else None
        return getattr(struct, "message", None)

    return message


def session_record(line: int, data: Mapping[str, Any]) -> SessionRecord:
    """A record read whole (or cut to its fields) as a `SessionRecord`."""
    uuid, parent, sidechain = data.get("uuid"), data.get("parentUuid"), data.get("isSidechain")
    kind, message = data.get("type"), data.get("message")
    return SessionRecord(line, data, kind, uuid, parent, bool(sidechain), message)


def looks_like_claude_code(first: Mapping[str, Any]) -> bool:
    """Sniff: does this first JSONL object look like a Claude Code record?"""
    kind = first.get("type")
    if kind == "summary" and "leafUuid" in first:
        return True
    if kind in ("file-history-snapshot", "queue-operation") and (
        "messageId" in first or "sessionId" in first
    ):
        return True
    return kind in ("user", "assistant", "system", "progress", "attachment") and (
        "parentUuid" in first or "sessionId" in first or "uuid" in first
    )


def note_orphans(
    path: Path,
    orphans: list[tuple[int, str]],
    meta: Mapping[str, Any],
    warnings: list[str] | None,
) -> None:
    """Warn once of a segment's tool results whose call is not in the file; ``meta``: the
    meta of the message holding the first."""
    if not orphans or warnings is None:
        return
    where = meta_position(orphans[0][0], meta)
    note = (
        f"{path}: {where}: {len(orphans)} tool result(s) whose call is not in the file (the "
        f"session starts mid-exchange, first {orphans[0][1]!r}); read as they are, a handoff "
        f"removes them"
    )
    if note not in warnings:
        warnings.append(note)


def _build_thread(
    name: str, records: list[SessionRecord], path: Path, warnings: list[str] | None = None
) -> Thread:
    from ipse.transcript._thread import Segment, Thread  # (the prefix analysis needs neither)

    live, segments = live_segments(records)
    known_calls: set[str] = set()
    built = []
    for number, (boundary, part) in enumerate(segments):
        messages = _messages(part, path)
        orphans, known_calls = orphan_results(messages, known=known_calls)
        if orphans:
            note_orphans(path, orphans, messages[orphans[0][0]].meta, warnings)
        model = next((m.meta.get("model") for m in reversed(messages) if m.meta.get("model")), None)
        conversation = Conversation(
            messages=tuple(messages),
            settings={"model": model} if model else {},
            dialect="anthropic",
            meta={
                "format": "claude-code",
                "path": str(path),
                "thread": name,
                "segment": number,
                "boundary": boundary,
            },
        )
        built.append(Segment(conversation, boundary))
    skipped = Counter(
        str(r.data.get("subtype") or r.kind)
        for r in live
        if r.kind not in MESSAGE_TYPES and not is_boundary(r)
    )
    return Thread(name, tuple(built), str(path), dict(sorted(skipped.items())))


def _messages(records: Iterable[SessionRecord], path: Path) -> list[Message]:
    """Message records as messages: assistant parts merged by id, tool results grouped. A
    merged message's blocks are gathered in one list and made a message at the end: a
    response written as thousands of records costs each record once."""
    out: list[Message] = []
    only_results = ResultsOnly()
    merging: dict[int, _Merging] = {}  # per merged message: its blocks and call ids so far
    by_id: dict[str, int] = {}
    for record in records:
        data = record.data
        kind = record.kind
        payload = record.message
        if kind not in MESSAGE_TYPES or not isinstance(payload, Mapping):
            continue
        try:
            message = read_message(payload, source=str(path))
        except InputError as exc:
            raise InputError(exc.detail, path=path, position=f"line {record.line}") from exc
        meta = record_meta(record)
        if data.get("isMeta") or data.get("isCompactSummary"):
            message = as_harness(message)
        if kind == "assistant":
            message_id = payload.get("id")
            index = by_id.get(message_id) if isinstance(message_id, str) else None
            if index is not None and only_results.all_after(index):
                # another block of the same response (its tool results may come between)
                _merge(out, merging, index, message, meta)
                merged = merging[index]
                only_results.set(
                    index, out[index].role == "user" and bool(merged.blocks) and not merged.others
                )
                continue
            if isinstance(message_id, str):
                by_id[message_id] = len(out)
        elif only_results.last() and _only_results(message.role, message.blocks):
            _merge(out, merging, len(out) - 1, message, meta)
            continue
        out.append(_with_meta(message, meta))
        only_results.append(_only_results(message.role, message.blocks))
    for index, merged in merging.items():
        first = out[index]
        out[index] = Message(first.role, tuple(merged.blocks), "blocks", None, first.meta)
    return out


class _Merging:
    """A message being merged from several records: its blocks, the ids of its calls, and
    how many of its blocks are not tool results."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self.blocks: list[Block] = []
        self.calls: set[str] = set()
        self.others = 0
        self.add(blocks)

    def add(self, blocks: Sequence[Block]) -> None:
        self.blocks.extend(blocks)
        self.calls.update(b.id for b in blocks if isinstance(b, ToolCall))
        self.others += sum(1 for b in blocks if not isinstance(b, ToolResult))


class ResultsOnly:
    """Per message of a thread being read: whether it holds nothing but tool results; asked
    whether every message after a given one does (a response's next record then joins it)."""

    def __init__(self) -> None:
        self._flags: list[bool] = []
        self._others: list[int] = []  # the messages that do not, in order

    def append(self, flag: bool) -> None:
        if not flag:
            self._others.append(len(self._flags))
        self._flags.append(flag)

    def __getitem__(self, index: int) -> bool:
        return self._flags[index]

    def last(self) -> bool:
        return bool(self._flags) and self._flags[-1]

    def set(self, index: int, flag: bool) -> None:
        if flag == self._flags[index]:
            return
        self._flags[index] = flag
        at = bisect.bisect_left(self._others, index)
        if flag:
            del self._others[at]
        else:
            self._others.insert(at, index)

    def all_after(self, index: int) -> bool:
        return not self._others or self._others[-1] <= index


def record_meta(record: SessionRecord) -> dict[str, Any]:
    """What a message keeps of its record (``Message.meta``)."""
    payload = record.message
    timestamp, is_meta, summary, request_id, sidechain, request_ref = _meta_fields(record.data)
    meta: dict[str, Any] = {"uuids": [record.uuid], "lines": [record.line], "timestamp": timestamp}
    if is_object(payload):  # (spelled out: asked for every message record of a session)
        if (value := payload.get("model")) is not None:
            meta["model"] = value
        if (value := payload.get("id")) is not None:
            meta["message_id"] = value
        if (value := payload.get("usage")) is not None:
            meta["usage"] = value
        if (value := payload.get("diagnostics")) is not None:  # the API's own cache diagnosis
            meta["diagnostics"] = value
    if record.kind == "assistant" and (value := record.data.get("version")) is not None:
        meta["version"] = value  # the harness's version that sent the request
    if is_meta:
        meta["is_meta"] = is_meta
    if summary:
        meta["is_compact_summary"] = summary
    if request_id:
        meta["request_id"] = request_id
    if sidechain:
        meta["is_sidechain"] = sidechain
    if request_ref:
        meta["request_ref"] = request_ref
    return meta


# The fields of a message record its meta keeps, besides its message and uuid, in order.
_META_FIELDS = ("timestamp", "isMeta", "isCompactSummary", "requestId", "isSidechain", "requestRef")
_META_ATTRIBUTES = operator.attrgetter(*_META_FIELDS)


def _meta_fields(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """`_META_FIELDS` of a record's data (an absent one as None): read as attributes, in C,
    from the struct a message record is decoded into; from a record read whole, by name."""
    try:
        return _META_ATTRIBUTES(data)
    except AttributeError:  # a dict
        return tuple(map(data.get, _META_FIELDS))


def _with_meta(message: Message, meta: dict[str, Any]) -> Message:
    # The record's message is an API response (id, model, usage, ...); as part of a request it
    # is only its role and content, so no message-level raw is kept.
    return Message(message.role, message.blocks, message.content_form, None, meta)


def _merge(
    out: list[Message],
    merging: dict[int, _Merging],
    index: int,
    second: Message,
    meta: Mapping[str, Any],
) -> None:
    """Add a record's message to message ``index``; a tool call it already holds (a copied
    record) is not added twice."""
    merged = merging.get(index)
    if merged is None:
        merged = merging[index] = _Merging(out[index].blocks)
    merged.add([b for b in second.blocks if not (isinstance(b, ToolCall) and b.id in merged.calls)])
    merge_meta(out[index].meta, meta)


def merge_meta(first: Mapping[str, Any], second: Mapping[str, Any]) -> None:
    """Merge a record's meta into the meta of the message it joins (a dict of its own), in
    place: both records' ids and lines, and the later usage."""
    assert isinstance(first, dict)
    first["uuids"] = first.get("uuids", [])
    first["uuids"].extend(second["uuids"])
    first["lines"] = first.get("lines", [])
    first["lines"].extend(second["lines"])
    if "usage" in second:
        first["usage"] = second["usage"]
    if "diagnostics" in second:
        first["diagnostics"] = second["diagnostics"]


def _only_results(role: str, blocks: Sequence[Block]) -> bool:
    return role == "user" and bool(blocks) and all(isinstance(b, ToolResult) for b in blocks)


def as_harness(message: Message) -> Message:
    """The message with its text made the agent CLI's (what ``isMeta`` marks)."""
    blocks = tuple(
        Text(b.text, Origin.HARNESS, b.raw) if isinstance(b, Text) else b for b in message.blocks
    )
    return Message(message.role, blocks, message.content_form, message.raw, message.meta)
