"""The record tree of a Claude Code session: which records make a thread's conversation.

A session file is a tree: each record names its parent in ``parentUuid``, and a rewind, an
edited message or a retry leaves an abandoned branch behind. `live_path` walks from the last
record back to the root, across compaction boundaries (a ``compact_boundary`` record points back
with ``logicalParentUuid``); the records a parallel tool call leaves beside that path join it
(a call whose id is already there is a copy, not a sibling); `live_segments` cuts the path at
its boundaries. `members` groups inline sidechains by their roots.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ipse._names import Names
from ipse.jsonio import is_object
from ipse.transcript._formats.claude_code_stored import StoredContent

MESSAGE_TYPES = ("user", "assistant")
# The records a session journals its API requests in (`claude_code_journal` reads them).
JOURNAL_TYPES = Names({"api-request-shape", "api-request-blob", "api-request"})


class SessionRecord(NamedTuple):
    """A session record with the fields its tree is built from, read once while the record is
    fresh from the parser: the passes over a session's tens of thousands of records (threads,
    the live path, its siblings) then read this tuple, not the record's dict, which a large
    session has long pushed out of the processor's caches."""

    line: int
    data: Mapping[str, Any]
    kind: Any  # data["type"], as written
    uuid: Any  # data["uuid"], as written (a record links only where it is a string)
    parent: Any  # data["parentUuid"], as written
    sidechain: bool  # data["isSidechain"] is truthy
    message: Any  # data["message"], as written (None when absent)


def has_journal(records: Iterable[SessionRecord]) -> bool:
    """Whether a session journals its API requests (`JOURNAL_TYPES`)."""
    return any(r.kind == "api-request" for r in records)


def members(records: list[SessionRecord], roots: list[str]) -> dict[str, list[SessionRecord]]:
    """For each of ``roots``, the records whose ancestry reaches it (file order). One walk up
    each record's ancestry, each step taken once; a loop of parents ends the walk (a record in
    or above a loop reaches the roots in the loop: a repeated id can put one there)."""
    parent_of = {record_id(r.uuid): record_id(r.parent) for r in records}
    wanted = set(roots)
    reached: dict[Any, tuple[str, ...]] = {}  # uuid -> the roots its ancestry reaches
    groups: dict[str, list[SessionRecord]] = {root: [] for root in roots}
    for record in records:
        for root in _roots_above(record_id(record.uuid), parent_of, wanted, reached):
            groups[root].append(record)
    return groups


def _roots_above(
    uuid: str | None,
    parent_of: dict[Any, str | None],
    roots: set[str],
    reached: dict[Any, tuple[str, ...]],
) -> tuple[str, ...]:
    """The roots on the ancestry of ``uuid`` (itself included), remembered in ``reached`` for
    every record the walk passed."""
    trail: list[str] = []
    seen: set[str] = set()
    current = uuid
    while (
        current is not None
        and current not in reached
        and current in parent_of
        and current not in seen
    ):
        trail.append(current)
        seen.add(current)
        current = parent_of[current]
    if current is not None and current in seen:  # a loop: each of its records reaches the
        loop = trail[trail.index(current) :]  # roots in it (a walk from any goes round it)
        found = tuple(item for item in loop if item in roots)
        for item in loop:
            reached[item] = found
        trail = trail[: -len(loop)]
    else:
        found = reached.get(current, ())
    for item in reversed(trail):
        if item in roots:
            found = (*found, item)
        reached[item] = found
    return reached.get(uuid, ()) if uuid is not None else ()


def record_id(value: Any) -> str | None:
    """A record id (``uuid``, ``parentUuid``) when it is a string, else None: a record whose id
    is a list or an object links to nothing."""
    return value if isinstance(value, str) else None


def live_path(records: list[SessionRecord]) -> list[SessionRecord]:
    """From the last record with a uuid back to the root, across compaction boundaries."""
    # uuid -> the place in ``records`` of its (last) record; a uuid that is not a string is
    # never looked up (a walk asks only for strings), so it may stay in the map: built in C
    try:
        place = dict(zip(map(_UUID, records), range(len(records)), strict=True))
    except TypeError:  # a list or an object as a uuid
        place = {r.uuid: i for i, r in enumerate(records) if type(r.uuid) is str}
    path: list[SessionRecord] = []
    # the places walked: a walk reaches a uuid only at its place, so a place seen twice is a
    # uuid seen twice (a byte per record: no set of a hundred thousand uuids to grow)
    walked = bytearray(len(records))
    at: int | None = _uuid_before(records, len(records))
    while at is not None:
        if walked[at]:  # a cycle: stop rather than loop forever
            break
        walked[at] = 1
        current = records[at]
        uuid = current.uuid
        path.append(current)
        parent = current.parent
        if parent is None and is_boundary(current):
            logical = current.data.get("logicalParentUuid")
            if isinstance(logical, str) and logical in place:
                parent = logical
            else:
                # The logical parent is not in the file: the part before the boundary ends
                # with the last record written before it.
                before = _uuid_before(records, place[uuid])
                parent = records[before].uuid if before is not None else None
        at = place.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def _uuid_before(records: list[SessionRecord], end: int) -> int | None:
    """The place of the last record before ``end`` that has a uuid."""
    for i in range(end - 1, -1, -1):
        if type(records[i].uuid) is str:
            return i
    return None


def is_boundary(record: SessionRecord) -> bool:
    return record.kind == "system" and record.data.get("subtype") == "compact_boundary"


def _with_parallel_siblings(
    live: list[SessionRecord], records: list[SessionRecord]
) -> list[SessionRecord]:
    """Add the records that a parallel tool call leaves beside the live path.

    The harness writes each block of a response as its own record, chained one after another,
    and hangs each tool result off the record of its own call. With several calls in one
    response, the path from the last record passes through only one of those branches; the
    other calls' records (same ``message.id``) and their results are siblings, not abandoned
    work. They join the path in file order; a call answered twice keeps one result.
    """
    on_path = set(map(id, live))
    attached = {r.uuid for r in live if isinstance(r.uuid, str)}
    siblings: _Siblings | None = None
    extra: list[SessionRecord] = []
    for record in records:  # file order: a parent comes before its children
        if record.kind not in MESSAGE_TYPES:  # (progress, snapshots, ...: never added)
            continue
        parent = record.parent
        if id(record) in on_path or not isinstance(parent, str) or parent not in attached:
            continue
        if siblings is None:
            siblings = _Siblings(live)
            if not siblings.responses:  # no response on the path says its id: none joins it
                return live
        if siblings.join(record):
            extra.append(record)
            if isinstance(record.uuid, str):
                attached.add(record.uuid)
    if not extra:
        return live
    return sorted([*live, *extra], key=_LINE)


class _Siblings:
    """The responses, calls and results on the path, gathered when the first record that
    hangs off the path turns up (a session with none never reads them), and those that joined
    it since."""

    def __init__(self, live: list[SessionRecord]) -> None:
        self.responses, self.calls, self.answered = _path_ids(live)

    def join(self, record: SessionRecord) -> bool:
        """Whether ``record`` joins the path: another block of a response on it that calls
        nothing the path calls already, or the results of calls on it not answered yet."""
        payload = record.message
        if record.kind == "assistant" and isinstance(payload, Mapping):
            ids = _call_ids(payload)
            response_id = payload.get("id")
            if not isinstance(response_id, str) or response_id not in self.responses:
                return False  # another response
            if ids & self.calls:
                return False  # a copy of a call already on the path
            self.calls |= ids
            return True
        if record.kind == "user":
            ids = _result_ids(record)
            if not ids or not ids <= self.calls or ids & self.answered:
                return False
            self.answered |= ids
            return True
        return False


_LINE = operator.itemgetter(0)  # a record's line (`SessionRecord.line`)
_UUID = operator.itemgetter(3)  # a record's uuid (`SessionRecord.uuid`)


def _path_ids(live: list[SessionRecord]) -> tuple[set[str], set[str], set[str]]:
    """The ids of the responses and tool calls on the path (its assistant records' message
    ids, `_call_ids`) and of the calls its tool results answer (`_result_ids`), in one pass."""
    responses: set[str] = set()
    calls: set[str] = set()
    answered: set[str] = set()
    for record in live:
        kind = record.kind
        if kind == "assistant":
            payload = record.message
            if is_object(payload):
                response_id = payload.get("id")
                if isinstance(response_id, str):
                    responses.add(response_id)
                calls |= _call_ids(payload)
        elif kind == "user":
            answered.update(_result_ids(record))
    return responses, calls, answered


def _call_ids(payload: Mapping[str, Any]) -> set[str]:
    content = payload.get("content")
    if isinstance(content, StoredContent):
        return {str(ident) for ident in content.call_ids()}
    if not isinstance(content, list):
        return set()
    return {str(b.get("id")) for b in content if is_object(b) and b.get("type") == "tool_use"}


def _result_ids(record: SessionRecord) -> set[str]:
    payload = record.message
    if record.kind != "user" or not is_object(payload):
        return set()
    content = payload.get("content")
    if isinstance(content, StoredContent):  # (its notes say the same)
        if not content.only_results():
            return set()
        return {str(ident) for _, ident, _ in content.notes}
    if not isinstance(content, list) or not content:
        return set()
    ids = set()
    for block in content:
        if not is_object(block) or block.get("type") != "tool_result":
            return set()  # only records that hold nothing but tool results
        ids.add(str(block.get("tool_use_id")))
    return ids


def live_segments(
    records: list[SessionRecord],
) -> tuple[list[SessionRecord], list[tuple[Mapping[str, Any] | None, list[SessionRecord]]]]:
    """A thread's live path (parallel calls' siblings included), and the path cut at its
    compaction boundaries: (the boundary record opening each part or None, its records)."""
    live = _with_parallel_siblings(live_path(records), records)
    segments: list[tuple[Mapping[str, Any] | None, list[SessionRecord]]] = [(None, [])]
    for record in live:
        if is_boundary(record):
            segments.append((record.data, []))
        else:
            segments[-1][1].append(record)
    if segments[0][0] is None and not segments[0][1] and len(segments) > 1:
        segments.pop(0)
    return live, segments
