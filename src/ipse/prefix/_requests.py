"""The sequence of requests to analyse, read from a log, a JSONL of bodies, or a session.

A `Request` is a request body (the provider's JSON, as sent) with its time, the time its
response began, and the usage the provider reported, when the log has them. Sources:

* HTTP logs (a folder of exchanges, JSONL, HAR) and JSONL of bare request bodies with optional
  ``ts`` and ``usage``: read here directly with orjson, line by line, keeping the body dicts as
  parsed; building the neutral transcript model of every request would cost several times the
  parse, and the prefix analysis needs only the bytes. Exchange details (usage from SSE, times
  from headers) are read with the http-log reader's own helpers, so both agree.
* Claude Code sessions: one request per assistant turn, rebuilt from the thread's messages
  before that turn (the system prompt and tools are not recorded in older sessions: one
  placeholder block stands for them, its size fitted to the usage), with automatic caching
  (a top-level ``cache_control``), the turn's usage from the assistant records, its time from
  the record before it, its response start from its own. Where the session journals its API
  requests (``api-request*`` records, named by the assistant record's ``requestRef``), the
  system prompt, tools and settings are the ones sent, and so are the messages and their
  breakpoints when the journal resolves them
  (`ipse.transcript._formats.claude_code_journal`). Journaled requests that extend each other
  share one list of messages (a `SharedHistory`), each with its own breakpoints as an overlay;
  where a later request sent a message of that list again, changed, the list goes on with
  the later one and the earlier request keeps its messages past that point as its own tail.
  Every billed call counts, in time order: those the live path leaves out (interrupted or
  retried, on a branch the conversation left; marked ``off_path``), the sub-agents' (inline
  sidechains, and ``<session>/subagents/*.jsonl``; each request names its ``agent``); records
  of one call without a response id (the same request id; with none, the same input side of
  the usage and the output count rising, only the call's tool results between) are one call.
* Codex rollouts: one Responses request per model call, every call a view of one shared list
  of input items (a `SharedHistory` on ``input``), as the rollout never edits what it sent;
  the first call after a ``compacted`` record is a compaction call.
* A single request body (for ``lint``), or the one request a harness file that ipse writes
  back holds (a Cline history, a SWE-agent or mini-swe-agent trajectory).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ipse import jsonio
from ipse._os_errors import os_error
from ipse.errors import InputError
from ipse.fileio import check_text_head
from ipse.prefix._actual import compacts, same_call
from ipse.prefix._growing import SharedHistory
from ipse.prefix._log_requests import log_requests, rollout_requests
from ipse.prefix._request import Request, provider_of
from ipse.transcript import detect
from ipse.transcript._shared import (
    WRITABLE_FORMATS,
    Shape,
    StoredMessage,
    body_codec,
    body_dialect,
    codec,
    format_named,
    parse_json,
    parse_time,
    read_text_bytes,
    record_format,
    results_only,
)

__all__ = ["UNRECORDED_FRONT", "Request", "RequestLog", "body_provider", "read_requests"]

if TYPE_CHECKING:
    from ipse.transcript._shared import ClaudeCodeSession, JournaledRequest

# Stands for the system prompt and tools a session file does not record; its size is fitted
# to the recorded usage (`ipse.prefix._report`).
UNRECORDED_FRONT: list[dict[str, Any]] = [
    {
        "type": "text",
        "text": "[system prompt and tool definitions: not recorded in the session]",
        "cache_control": {"type": "ephemeral"},
    }
]


@dataclass(slots=True)
class RequestLog:
    """The requests of one input, in log order, and what was noticed reading them."""

    path: Path
    format: str
    requests: list[Request]
    warnings: list[str] = field(default_factory=list)
    merged: int = 0  # records merged into the call before them (one call, several records)


def read_requests(path: str | Path, format: str | None = None) -> RequestLog:
    """Every request of a log, a JSONL of bodies, or a Claude Code session."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    if not p.is_dir():
        check_text_head(p)  # its size and first bytes, before a line of it is read
    name = format or _sniff(p)
    warnings: list[str] = []
    merged = [0]
    requests = _requests(p, name, warnings, merged)
    kept = [r for r in requests if _has_messages(r, warnings)]
    if not kept:
        raise InputError("no request with messages in this input", path=p)
    checked: dict[int, int] = {}
    fronts: dict[int, Any] = {}
    for request in kept:
        _check_front(request, p, fronts)
        _check_messages(request, p, checked)
    if len(requests) == 1 and p.is_file() and _shape(name) in (Shape.BODY, Shape.LOG):
        dialect = name if _shape(name) is Shape.BODY else detect(p)  # (one-line body: a log)
        if _shape(dialect) is Shape.BODY and isinstance(kept[0].body, Mapping):
            _read_as_a_body(kept[0].body, dialect, p)
    return RequestLog(p, name, kept, warnings, merged[0])


def _shape(name: str) -> Shape | None:
    """The shape of the input a format name reads (None for a name the table does not know)."""
    entry = format_named(name)
    return None if entry is None else entry.shape


def _requests(p: Path, name: str, warnings: list[str], merged: list[int]) -> list[Request]:
    shape = _shape(name)
    if shape is Shape.SESSION:
        requests = list(_session_requests(p, warnings, merged))
    elif shape is Shape.LOG:
        requests = list(log_requests(p, warnings))
    elif shape is Shape.ROLLOUT:
        requests = list(rollout_requests(p, warnings))
    elif shape is Shape.BODY:
        body = parse_json(read_text_bytes(p), p)
        if not isinstance(body, Mapping):
            raise InputError("a request body must be a JSON object", path=p)
        requests = [Request(0, body, provider_of(name), source=str(p))]
    elif name in WRITABLE_FORMATS:  # a harness file holding one conversation: its request
        from ipse.transcript import load, write  # (the loader knows every reader: on use)

        conversation = load(p, name).current()
        body = write(conversation)
        requests = [Request(0, body, provider_of(conversation.dialect), source=str(p))]
    else:
        raise InputError(
            f"prefix analysis reads http logs, request bodies, sessions, rollouts and the "
            f"harness files ipse writes back ({', '.join(WRITABLE_FORMATS)}), not {name}"
        )
    return requests


def _read_as_a_body(body: Mapping[str, Any], dialect: str, p: Path) -> None:
    """Read a lone request body as every other command reads it (the dialect's reader and the
    check that each tool result follows its call), so a body they refuse is refused here too:
    one reader, one verdict. (A log of many requests is not read into the model.)"""
    from ipse.transcript._shared import check_links

    check_links(codec(dialect).read_body(body, source=str(p)).messages, path=p)


def _check_front(request: Request, p: Path, checked: dict[int, Any]) -> None:
    """Refuse a tool list that is not a list of objects, and an Anthropic ``system`` that is
    neither text nor a list of block objects (the provider refuses both). A list shared by
    many requests (``checked``: by identity) is checked once."""
    body = request.body
    where = f"request {request.index}"
    tools = body.get("tools")
    if tools is not None and checked.get(id(tools)) is not tools:
        if not (isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)):
            raise InputError("'tools' must be a list of objects", path=p, position=where)
        checked[id(tools)] = tools
    system = body.get("system")
    if request.provider != "anthropic" or checked.get(id(system)) is system:
        return
    checked[id(system)] = system
    if not (
        system is None
        or isinstance(system, str)
        or (isinstance(system, list) and all(isinstance(b, Mapping) for b in system))
    ):
        raise InputError(
            "'system' must be a string or a list of block objects", path=p, position=where
        )


def _check_messages(request: Request, p: Path, checked: dict[int, int]) -> None:
    """Refuse messages that are not objects, and content that is neither text, a list of
    block objects, nor null: a replay of such a request would measure nothing real. Messages
    of a shared history are checked once (``checked``: per list, how many were), and not at
    all when the history says they are well formed (`SharedHistory.checked`)."""
    body = request.body
    first = 0
    messages: Any = body.get("messages") or () if not isinstance(body, SharedHistory) else ()
    tail: Any = ()
    tail_from = 0
    if isinstance(body, SharedHistory):
        if body.key != "messages":  # Responses input items: not checked (as when copied)
            return
        first = body.count if body.checked else checked.get(id(body.base), 0)
        checked[id(body.base)] = max(first, body.count)
        messages = body.base[first : body.count]
        tail, tail_from = body.tail, body.count
    numbered: Iterator[tuple[int, Any]] = enumerate(messages, start=first)
    if tail:  # (its own messages: few)
        numbered = itertools.chain(numbered, enumerate(tail, start=tail_from))
    for number, message in numbered:
        if type(message) is StoredMessage:
            continue  # (made of records checked as they were read)
        if not jsonio.is_object(message):
            where = f"request {request.index} message {number}"
            raise InputError("a message must be a JSON object", path=p, position=where)
        if not isinstance(message.get("role"), str):  # (the readers refuse it too)
            where = f"request {request.index} message {number}"
            raise InputError("a message needs a string 'role'", path=p, position=where)
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            where = f"request {request.index} message {number}"
            raise InputError(
                "message content must be a string or a list of blocks", path=p, position=where
            )
        for block_number, block in enumerate(content):
            if not jsonio.is_object(block):
                raise InputError(
                    "a content block must be a JSON object",
                    path=p,
                    position=f"request {request.index} message {number} block {block_number}",
                )


def _sniff(p: Path) -> str:
    """The format, from the first line alone when it says (a large log is not read twice)."""
    if p.is_file():
        try:
            with p.open("rb") as handle:
                first = handle.readline()
        except OSError as exc:
            raise os_error(exc, "read", p) from exc
        try:
            value = jsonio.loads(first)
        except jsonio.JSONDecodeError:
            value = None
        name = record_format(value) if isinstance(value, Mapping) else None
        entry = format_named(name) if name is not None else None
        if entry is not None and entry.shape in (Shape.SESSION, Shape.LOG):
            return entry.name  # (a one-line request body reads as a log of one request)
    return detect(p)


def _has_messages(request: Request, warnings: list[str]) -> bool:
    if isinstance(request.body, SharedHistory) and (request.body.count or request.body.tail):
        return True
    if body_codec(request.body, request.provider).positions(request.body).messages:
        return True
    warnings.append(f"request {request.index} ({request.source}) has no messages; skipped")
    return False


# ----------------------------------------------------------------------------- claude code


def _session_requests(p: Path, warnings: list[str], merged: list[int]) -> Iterator[Request]:
    """Every billed call of a session, in time order: the main thread's live path, the calls
    its live path leaves out (interrupted or retried requests on abandoned branches: billed,
    and they can rebuild the cache), and its sub-agents' files, each call attributed to its
    agent. Records of one call that carry no response id (exported or extracted sessions:
    the call's thinking, text and tool uses as records of their own, its tool results between
    them, each with the call's usage and the output counted so far) are one call
    (`ipse.prefix.same_call`)."""
    # (the Claude Code readers on use: a Codex rollout or a log needs none of them, and they
    # took 11 million instructions of 620, about 3 ms, of ``ipse prefix`` on a 1 MB rollout)
    from ipse.prefix._segments import digest
    from ipse.transcript._shared import MAIN, read_session

    # each message's blocks digested as they are read, and dropped: the replay needs their
    # hashes and sizes (and a cause, or the report, reads a block back when it needs it)
    session = read_session(p, warnings=warnings, digest=digest)
    calls = list(_thread_requests(session, MAIN, None, p, merged))
    for name, agent in _agents(session):
        calls.extend(_thread_requests(session, name, agent, p, merged))
    if merged[0]:
        warnings.append(
            f"{merged[0]} record(s) without a response id belonged to the call before them "
            "(its request id, or with no id its usage): merged into that call"
        )
    if all(r.response_start is not None for r in calls):
        calls.sort(key=lambda r: r.response_start or datetime.min)
    for index, request in enumerate(calls):
        yield msgspec.structs.replace(request, index=index)


def _agents(session: ClaudeCodeSession) -> list[tuple[str, str]]:
    """The sub-agent threads of a session, each with the name its calls are attributed to:
    those written inline (older sessions: ``isSidechain`` records beside the main thread's,
    ``sidechain-N``), and those in ``<session>/subagents/*.jsonl``, by the file's stem and its
    ``.meta.json``'s agent type when there is one."""
    out = [(name, name) for name in session.thread_names() if name.startswith("sidechain-")]
    for name, path in sorted(session.subagent_files.items()):
        label = name
        meta_path = path.with_suffix(".meta.json")
        if meta_path.is_file():
            try:
                meta = jsonio.loads(meta_path.read_bytes())
            except (OSError, jsonio.JSONDecodeError):
                meta = None
            if jsonio.is_object(meta):
                kind = meta.get("agentType") or meta.get("subagent_type") or meta.get("type")
                if isinstance(kind, str) and kind:
                    label = f"{name} ({kind})"
        out.append((name, label))
    return out


def _thread_requests(
    session: ClaudeCodeSession, name: str, agent: str | None, p: Path, merged: list[int]
) -> Iterator[Request]:
    """One thread's billed calls (see `_session_requests`), their indexes to be numbered."""
    from ipse.transcript._shared import billed_thread, has_journal

    records = session.records
    thread, off_path = billed_thread(session, name)
    dicts_of = [[m.body for m in segment] for segment in thread.segments]
    journal: Mapping[str, JournaledRequest] = {}
    if agent is None and has_journal(records):  # (its reader on use: most sessions have none)
        from ipse.transcript._shared import read_journal

        journal = read_journal(records, (m for dicts in dicts_of for m in dicts))
    calls = _ThreadCalls(
        thread.name if agent is None else f"agent:{name}",
        agent,
        agent is not None and "compact" in name,  # a sub-agent that compacts
        p,
    )
    for number, (messages, dicts) in enumerate(zip(thread.segments, dicts_of, strict=True)):
        yield from calls.live(messages, dicts, journal, first=number > 0, merged=merged)
    for call in off_path:
        found = calls.off_path(call, dicts_of, thread.segments)
        if found is not None:
            yield found


def harness_items(messages: Sequence[Any]) -> frozenset[int]:
    """The messages of a session's thread whose text Claude Code wrote, not the person: its
    ``isMeta`` records (a command's expansion) and its compaction summary."""
    return frozenset(
        i
        for i, m in enumerate(messages)
        if m.meta.get("is_meta") or m.meta.get("is_compact_summary")
    )


class _ThreadCalls:
    """Makes the requests of one thread's calls: its live path's segment by segment, then
    those off it; one front per model, shared by its requests."""

    def __init__(self, conversation: str, agent: str | None, compacting: bool, p: Path) -> None:
        self.conversation = conversation
        self.agent = agent
        self.compacting = compacting
        self.p = p
        self.fronts: dict[Any, dict[str, Any]] = {}

    def live(
        self,
        messages: Sequence[Any],
        dicts: list[Any],
        journal: Mapping[str, JournaledRequest],
        *,
        first: bool,
        merged: list[int],
    ) -> Iterator[Request]:
        """The calls of one segment of the live path (``first``: the segment follows a
        compaction, and its first call is the compaction's)."""
        call: Mapping[str, Any] | None = None  # the meta of the last record of the call
        harness = harness_items(messages)
        for k, message in enumerate(messages):
            if message.body["role"] != "assistant":
                call = call if results_only(message.body) else None
                continue
            meta = message.meta
            model = meta.get("model")
            if k == 0 or model == "<synthetic>":
                call = None
                continue
            if call is not None and same_call(call, meta):
                merged[0] += 1
                call = meta
                continue
            call = meta
            before = messages[k - 1]
            journaled = journal.get(str(meta.get("request_ref")))
            if journaled is not None:
                request_body = _journaled_body(journaled, model, dicts, k)
            else:
                request_body = SharedHistory(
                    _front(self.fronts, model), dicts, k, checked=True, harness=harness
                )
            pending = _request(
                request_body, meta, before.meta, f"{self.p}:message {k}", self.conversation
            )
            compaction = first or self.compacting or compacts(meta.get("usage"))
            yield pending._r(self.agent, compaction=compaction)
            first = False

    def off_path(
        self, call: Any, dicts_of: list[list[Any]], segments: Sequence[Sequence[Any]]
    ) -> Request | None:
        """A billed call the live path leaves out, after the messages it was sent with (None:
        a call sent with nothing)."""
        model = call.meta.get("model")
        tail = [m.body for m in call.tail]
        sent_before: Mapping[str, Any] | None
        if call.segment is None:
            base, count, tail = tail, len(tail), []
            sent_before = call.tail[-1].meta if call.tail else None
        else:
            base, count = dicts_of[call.segment], call.upto
            joined = segments[call.segment][count - 1]
            sent_before = call.tail[-1].meta if call.tail else joined.meta
        if sent_before is None or not count + len(tail):
            return None
        front = _front(self.fronts, model)
        request_body = SharedHistory(front, base, count, tail=tail, checked=True)
        line = (call.meta.get("lines") or ["?"])[0]
        pending = _request(
            request_body, call.meta, sent_before, f"{self.p}:line {line}", self.conversation
        )
        compaction = self.compacting or compacts(call.meta.get("usage"))
        return pending._r(self.agent, compaction=compaction, off_path=True)


def _front(fronts: dict[Any, dict[str, Any]], model: Any) -> dict[str, Any]:
    """The front standing for a session's unrecorded system prompt and tools, one per model."""
    front = fronts.get(model) if isinstance(model, str | None) else None
    if front is None:
        front = {"model": model, "system": UNRECORDED_FRONT, "cache_control": {"type": "ephemeral"}}
        if isinstance(model, str | None):
            fronts[model] = front
    return front


@dataclass(frozen=True, slots=True)
class _Pending:
    """A request read from a session, its agent and kind still to be said."""

    body: Mapping[str, Any]
    time: datetime | None
    response_start: datetime | None
    usage: Mapping[str, Any] | None
    source: str
    conversation: str
    version: str | None
    diagnostics: Mapping[str, Any] | None

    def _r(self, agent: str | None, *, compaction: bool, off_path: bool = False) -> Request:
        return Request(
            -1,
            self.body,
            "anthropic",
            self.time,
            self.response_start,
            self.usage,
            self.source,
            self.conversation,
            agent,
            self.version,
            self.diagnostics,
            compaction,
            off_path,
        )


def _request(
    body: Mapping[str, Any],
    meta: Mapping[str, Any],
    before: Mapping[str, Any],
    source: str,
    conversation: str,
) -> _Pending:
    usage = meta.get("usage")
    version = meta.get("version")
    diagnostics = meta.get("diagnostics")
    return _Pending(
        body,
        parse_time(before.get("timestamp")),
        parse_time(meta.get("timestamp")),
        usage if isinstance(usage, Mapping) else None,
        source,
        conversation,
        version if isinstance(version, str) else None,
        diagnostics if isinstance(diagnostics, Mapping) else None,
    )


def _journaled_body(
    journaled: JournaledRequest, model: Any, rebuilt: list[Any], count: int
) -> Mapping[str, Any]:
    """A request as the session journaled it: the front and settings exactly as sent, the
    messages as journaled when they resolve (else the first ``count`` of those rebuilt from
    the records, with automatic caching standing for breakpoints not known)."""
    body: dict[str, Any] = {
        k: v for k, v in journaled.params.items() if k not in ("betas", "messages")
    }
    body.setdefault("model", model)
    body["system"] = journaled.system if journaled.system is not None else UNRECORDED_FRONT
    if journaled.tools:
        body["tools"] = journaled.tools
    if journaled.history is not None:
        if journaled.breakpoints is None:  # marks of an unusual kind: the list as sent
            body["messages"] = journaled.messages
            return body
        overlay = tuple((i, j, _ttl(value)) for i, j, value in journaled.breakpoints)
        as_sent = bool(journaled.marks) or journaled.changed  # (the list differs from it)
        return SharedHistory(
            body,
            journaled.history,
            journaled.count,
            tail=journaled.tail,
            overlay=overlay,
            materialize=(lambda: journaled.messages or []) if as_sent else None,
            sent=journaled.message if as_sent else None,
        )
    body["cache_control"] = {"type": "ephemeral"}
    return SharedHistory(body, rebuilt, count, checked=True)


def _ttl(marker: Mapping[str, Any]) -> str:
    """A breakpoint's TTL as the flattener reads it (`ipse.prefix._blocks.without_breakpoint`)."""
    return "1h" if marker.get("ttl") == "1h" else "5m"


def body_provider(body: Mapping[str, Any]) -> str:
    """``anthropic`` or ``openai``, by the body's shape."""
    return provider_of(body_dialect(body))
