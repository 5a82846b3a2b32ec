"""A Claude Code thread's messages as the requests sent them, read without the neutral model.

Replaying a session's requests (``ipse prefix``) needs each message of the live path as a
Messages API dict, ``{"role", "content"}``, and its meta (model, usage, times, request
reference): exactly what `write` gives for the thread's conversation, whose messages
`ipse.transcript._formats.claude_code` builds. Building a neutral block for every content block
only to write the same dict back costs more than reading the file did, so `request_thread`
groups the records into messages by the same rules, each message a `StoredMessage`: a mapping
of its role and its content, which holds the notes of its blocks (type, call id, the reader's
digest: `ipse.transcript._formats.claude_code_stored`) and gives the blocks as parsed when its
content is asked for (read back from the file, for a session read with a digest).

That is only the same answer when every block would be written back as it was read: a text,
a tool call with string id and name, a tool result with a string call id and text, null or
such blocks as content, a thinking block with string text and signature, or a block of
another type. A thread holding anything else (a record whose message has no string role, a
block that is not an object, a call id that is a number, ...) is built through the neutral
model instead, and gives its answer (or its error) word for word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ipse import _progress as progress
from ipse.jsonio import is_object
from ipse.transcript._formats.anthropic import write_message
from ipse.transcript._formats.claude_code import (
    MAIN,
    ClaudeCodeSession,
    ResultsOnly,
    merge_meta,
    note_orphans,
    record_meta,
)
from ipse.transcript._formats.claude_code_stored import (
    Note,
    StoredContent,
    StoredMessage,
    results_only,
    stored,
)
from ipse.transcript._formats.claude_code_tree import (
    MESSAGE_TYPES,
    SessionRecord,
    live_segments,
)


class RequestMessage(NamedTuple):
    """One message of a thread: the dict a request sends, and its ``Message.meta``."""

    body: Mapping[str, Any]
    meta: Mapping[str, Any]


class RequestThread(NamedTuple):
    """A thread's messages, per segment (cut at compaction boundaries, oldest first)."""

    name: str
    segments: tuple[tuple[RequestMessage, ...], ...]


def request_thread(session: ClaudeCodeSession, name: str = MAIN) -> RequestThread:
    """The thread ``name`` of ``session`` as request messages (see the module's docstring):
    each ``{"role": text, "content": text or a list of objects}``; warnings go to the
    session's, as `ClaudeCodeSession.thread` gives them."""
    return _request_thread(session, name)[0]


def billed_thread(
    session: ClaudeCodeSession, name: str = MAIN
) -> tuple[RequestThread, list[OffPathCall]]:
    """`request_thread`, and the billed calls its live path leaves out (`OffPathCall`), from
    one reading of the thread's records."""
    thread, records = _request_thread(session, name)
    return thread, _off_path(thread, records)


def _request_thread(
    session: ClaudeCodeSession, name: str
) -> tuple[RequestThread, list[SessionRecord]]:
    label = f"building the {name} thread"
    progress.update(label, 0, 1)
    found, records, path = session.thread_records(name)
    _, parts = live_segments(records)
    segments = []
    for _, members in parts:
        messages = _messages(members)
        if messages is None:  # something the neutral model writes differently: ask it
            thread = session.thread(name)
            progress.update(label, 1, 1)
            built = RequestThread(
                found,
                tuple(
                    tuple(
                        RequestMessage(write_message(m), m.meta)
                        for m in segment.conversation.messages
                    )
                    for segment in thread.segments
                ),
            )
            return built, records
        segments.append(messages)
    known: set[str] = set()
    for messages in segments:
        _warn_orphans(messages, known, path, session.warnings)
    progress.update(label, 1, 1)
    return RequestThread(found, tuple(tuple(m) for m in segments)), records


def _messages(records: Sequence[SessionRecord]) -> list[RequestMessage] | None:
    """The records' messages (assistant parts merged by response id, consecutive tool
    results merged), as `claude_code._messages` groups them; None when some record is not
    plain (see the module's docstring). A merge extends the message in place: a response
    written as thousands of records costs each record once, not the blocks before it."""
    grouped = _Grouped()
    for record in records:
        if record.kind not in MESSAGE_TYPES:
            continue
        payload = record.message
        if type(payload) is not dict:
            if isinstance(payload, Mapping):
                return None
            continue  # (the neutral reader skips it too)
        role = payload.get("role")
        content = stored(payload.get("content"))
        if type(role) is not str or not content.plain:
            return None
        grouped.add(record, payload.get("id"), role, content)
    return grouped.out


class _Grouped:
    """The messages so far, and what merging the next record into them needs."""

    def __init__(self) -> None:
        self.out: list[RequestMessage] = []
        self.only_results = ResultsOnly()  # per message: a user message of only tool results
        self.calls: dict[int, set[Any]] = {}  # per merged message: the ids of its tool calls
        self.by_id: dict[str, int] = {}

    def add(
        self, record: SessionRecord, message_id: Any, role: str, content: StoredContent
    ) -> None:
        meta = record_meta(record)
        results = role == "user" and content.only_results()
        out = self.out
        if record.kind == "assistant":
            if self._merged(message_id, content, meta):
                return
            if isinstance(message_id, str):
                self.by_id[message_id] = len(out)
        elif results and self.only_results.last():
            _merge(out[-1], content, meta, self.calls, len(out) - 1)
            return
        out.append(RequestMessage(StoredMessage(role, content), meta))
        self.only_results.append(results)

    def _merged(self, message_id: Any, content: StoredContent, meta: Any) -> bool:
        """Whether an assistant record is another block of a response already read (its tool
        results may come between), merged into that response's message."""
        index = self.by_id.get(message_id) if isinstance(message_id, str) else None
        if index is None or not self.only_results.all_after(index):
            return False
        first = self.out[index].body
        assert isinstance(first, StoredMessage)
        all_results = self.only_results[index] or (first.is_list and not first.notes)
        added = _merge(self.out[index], content, meta, self.calls, index)
        self.only_results.set(
            index, first.role == "user" and all_results and added and bool(first.notes)
        )
        return True


def _merge(
    first: RequestMessage,
    content: StoredContent,
    meta: Mapping[str, Any],
    calls: dict[int, set[Any]],
    index: int,
) -> bool:
    """Add a record's blocks to message ``index`` in place (as `claude_code._merge`), less the
    tool calls it already holds (a copied record); ``calls``: each merged message's call ids.
    Whether every block added is a tool result."""
    body = first.body
    assert isinstance(body, StoredMessage) and isinstance(first.meta, dict)
    have = calls.get(index)
    if have is None:
        have = calls[index] = {ident for kind, ident, _ in body.notes if kind == "tool_use"}
    added: list[Any] = []
    kept: list[int] = []
    all_results = True
    for k, (kind, ident, _) in enumerate(content.notes):
        if kind == "tool_use":
            if ident in have:
                continue
            added.append(ident)
        all_results = all_results and kind == "tool_result"
        kept.append(k)
    body.add(content, None if len(kept) == len(content.notes) else tuple(kept))
    have.update(added)
    merge_meta(first.meta, meta)
    return all_results


def _only_results(message: RequestMessage) -> bool:
    """Whether a message is a user message of nothing but tool results."""
    return message.body["role"] == "user" and results_only(message.body)


def _notes(message: RequestMessage) -> Sequence[Note]:
    """The notes of a message's blocks (of its dict's, for a thread the neutral model built)."""
    body = message.body
    if isinstance(body, StoredMessage):
        return body.notes
    return stored(body["content"]).notes


def _warn_orphans(
    messages: Sequence[RequestMessage], known: set[str], path: Path, warnings: list[str]
) -> None:
    """Tool results whose call came neither before in this segment nor in an earlier one
    (``known``: the calls seen so far, updated), warned of as the neutral reader does."""
    orphans: list[tuple[int, str]] = []
    for index, message in enumerate(messages):
        for kind, ident, _ in _notes(message):
            if kind == "tool_use":
                known.add(ident)
            elif kind == "tool_result" and ident not in known:
                orphans.append((index, ident))
    if orphans:
        note_orphans(path, orphans, messages[orphans[0][0]].meta, warnings)


class OffPathCall(NamedTuple):
    """A billed call whose response is not on the thread's live path (interrupted, retried,
    or on a branch the conversation left): the messages its request sent, as the first
    ``upto`` messages of the live path's segment ``segment`` and then ``tail`` (the records on
    its own branch, grouped as `request_thread` groups them); with ``segment`` None, ``tail``
    holds them all. ``meta``: its response's."""

    segment: int | None
    upto: int
    tail: tuple[RequestMessage, ...]
    meta: Mapping[str, Any]


def off_path_calls(session: ClaudeCodeSession, name: str = MAIN) -> list[OffPathCall]:
    """The billed calls of thread ``name`` that its live path leaves out (`billed_thread`)."""
    return billed_thread(session, name)[1]


def _off_path(thread: RequestThread, records: Sequence[SessionRecord]) -> list[OffPathCall]:
    """One call per response id (``message.id``, else ``requestId``) with usage and a real
    model that no message of the live path holds, in file order. Its request is found by
    walking its parent chain back to the live path: a branch from the end of a live message
    shares that message's history and adds its own few (so many retries cost what they add,
    not the history each time); a branch from inside a message, or whose first message would
    join the live one, is read as the live path of the records up to it (`_as_if_last`). A
    response whose request holds a record `request_thread` would send through the neutral
    model is left out."""
    at_end, inside, seen = _live_records(thread)
    place, candidates, parts = _unheld_responses(records, at_end, inside, seen)
    out: list[OffPathCall] = []
    for number, record in candidates:
        branch, joins = _branch(record, place, at_end, inside)
        own = _messages(branch)
        if own is None:
            continue
        if joins is not None and _self_contained(branch, own, parts):
            segment, upto = joins
            live = thread.segments[segment]
            if upto < len(live) and _answered_before(live[upto - 1], live[upto], record.line):
                upto += 1  # the results of its calls, written before it: sent with it
            if not own or not _would_merge(live[upto - 1], own[0]):
                out.append(OffPathCall(segment, upto, tuple(own), record_meta(record)))
                continue
        rebuilt = _as_if_last(records, number)
        if rebuilt is not None:
            out.append(OffPathCall(None, 0, tuple(rebuilt), record_meta(record)))
    return out


def _live_records(
    thread: RequestThread,
) -> tuple[dict[str, tuple[int, int]], set[str], set[str]]:
    """Where the live path's records are: each live message's last record -> (segment, count
    of messages up to it), the other records of live messages, and the response ids the live
    path holds."""
    at_end: dict[str, tuple[int, int]] = {}  # a live message's last record -> (segment, count)
    inside: set[str] = set()  # the other records of live messages
    seen: set[str] = set()
    for number, messages in enumerate(thread.segments):
        for k, message in enumerate(messages):
            meta = message.meta
            uuids = [u for u in meta.get("uuids") or () if type(u) is str]
            if uuids:
                inside.update(uuids[:-1])
                at_end[uuids[-1]] = (number, k + 1)
            for field in ("message_id", "request_id"):
                value = meta.get(field)
                if isinstance(value, str):
                    seen.add(value)
    return at_end, inside, seen


def _unheld_responses(
    records: Sequence[SessionRecord],
    at_end: Mapping[str, tuple[int, int]],
    inside: set[str],
    seen: set[str],
) -> tuple[dict[str, SessionRecord], list[tuple[int, SessionRecord]], dict[str, int]]:
    """Every record by uuid; the billed responses (usage, a real model) the live path does not
    hold, one per response id, with their place in ``records`` (``seen`` gets their ids); and
    how many records each response id has."""
    place: dict[str, SessionRecord] = {}
    candidates: list[tuple[int, SessionRecord]] = []
    parts: dict[str, int] = {}  # response id -> its records
    for number, record in enumerate(records):
        if type(record.uuid) is str:
            place[record.uuid] = record
        if record.kind == "assistant" and is_object(record.message):
            response = record.message.get("id")
            if isinstance(response, str):
                parts[response] = parts.get(response, 0) + 1
        if record.kind != "assistant" or record.uuid in at_end or record.uuid in inside:
            continue
        key = _call_key(record)
        payload = record.message
        if key is None or key in seen or not isinstance(payload, Mapping):
            continue
        if payload.get("model") == "<synthetic>" or not isinstance(payload.get("usage"), Mapping):
            continue
        seen.add(key)
        candidates.append((number, record))
    return place, candidates, parts


def _branch(
    record: SessionRecord,
    place: Mapping[str, SessionRecord],
    at_end: Mapping[str, tuple[int, int]],
    inside: set[str],
) -> tuple[list[SessionRecord], tuple[int, int] | None]:
    """The records of a response's own branch, oldest first, walked back along its parents
    to the live path, and where it joins it (the end of a live message: segment, count);
    None when it starts inside a live message, or never reaches the live path."""
    branch: list[SessionRecord] = []
    at: Any = record.parent
    walked: set[str] = set()
    joins: tuple[int, int] | None = None
    while type(at) is str and at in place and at not in walked:
        if at in at_end:
            joins = at_end[at]
            break
        if at in inside:
            break  # from inside a live message: rebuilt whole (`_as_if_last`)
        walked.add(at)
        branch.append(place[at])
        at = place[at].parent
    branch.reverse()
    return branch, joins


def _as_if_last(records: Sequence[SessionRecord], number: int) -> list[RequestMessage] | None:
    """The messages the response at ``records[number]`` was sent after, read as the live
    path of the records up to it (parallel calls' siblings included, cut at compactions);
    None when they hold a record the neutral model would be asked for."""
    record = records[number]
    _, parts = live_segments(list(records[: number + 1]))
    messages = _messages(parts[-1][1]) if parts else None
    if messages is None:
        return None
    for k, message in enumerate(messages):
        if record.uuid in (message.meta.get("uuids") or ()):
            return messages[:k]
    return None


def _self_contained(
    branch: Sequence[SessionRecord], own: Sequence[RequestMessage], parts: Mapping[str, int]
) -> bool:
    """Whether a branch's records make its messages alone: every tool call in them answered
    in them, and every response in them whole (no record of it elsewhere, which the live
    path's reading would add as a parallel call's sibling)."""
    calls: set[str] = set()
    answered: set[str] = set()
    for message in own:
        for kind, ident, _ in _notes(message):
            if kind == "tool_use":
                calls.add(ident)
            elif kind == "tool_result":
                answered.add(ident)
    if not calls <= answered:
        return False
    counted: dict[str, int] = {}
    for record in branch:
        if record.kind == "assistant" and is_object(record.message):
            response = record.message.get("id")
            if isinstance(response, str):
                counted[response] = counted.get(response, 0) + 1
    return all(parts.get(k) == n for k, n in counted.items())


def _answered_before(calls: RequestMessage, results: RequestMessage, line: int) -> bool:
    """Whether ``results`` holds nothing but results of tool calls in ``calls``, all written
    before ``line`` (a request after those calls sends their results: the API requires it)."""
    if not _only_results(results):
        return False
    lines = results.meta.get("lines") or ()
    if not lines or max(lines) >= line:
        return False
    ids = {ident for kind, ident, _ in _notes(calls) if kind == "tool_use"}
    return all(ident in ids for _, ident, _ in _notes(results))


def _would_merge(before: RequestMessage, after: RequestMessage) -> bool:
    """Whether `_messages` would make one message of these two, were they read in a row: two
    results-only user messages, or two parts of one response."""
    role = before.body["role"]
    if role != after.body["role"]:
        return False
    if role == "user":
        return _only_results(before) and _only_results(after)
    first, second = before.meta.get("message_id"), after.meta.get("message_id")
    return isinstance(first, str) and first == second


def _call_key(record: SessionRecord) -> str | None:
    """The id of the API call an assistant record belongs to (None when it says none)."""
    if record.kind != "assistant":
        return None
    payload = record.message
    if isinstance(payload, Mapping):
        value = payload.get("id")
        if isinstance(value, str):
            return value
    value = record.data.get("requestId")  # (a dict, or the struct a record is cut to)
    return value if isinstance(value, str) else None


__all__ = [
    "OffPathCall",
    "RequestMessage",
    "RequestThread",
    "billed_thread",
    "off_path_calls",
    "request_thread",
]
