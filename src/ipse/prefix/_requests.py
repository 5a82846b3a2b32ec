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
  (`ipse.transcript.formats.claude_code_journal`). Journaled requests that extend each other
  share one list of messages (a `SharedHistory`), each with its own breakpoints as an overlay;
  where a later request sent a message of that list again, changed, the list goes on with
  the later one and the earlier request keeps its messages past that point as its own tail.
* Codex rollouts: one Responses request per model call, every call a view of one shared list
  of input items (a `SharedHistory` on ``input``), as the rollout never edits what it sent.
* A single request body (for ``lint``), or the one request a harness file that ipse writes
  back holds (a Cline history, a SWE-agent or mini-swe-agent trajectory).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from ipse import jsonio, lifetime
from ipse.errors import InputError, os_error
from ipse.jsonio import no_gc
from ipse.prefix._growing import SharedHistory
from ipse.transcript._codec import DIALECTS, body_codec, codec
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._links import check_links
from ipse.transcript._sniff import body_dialect, detect
from ipse.transcript._time import parse_time
from ipse.transcript._write import WRITABLE_FORMATS, write
from ipse.transcript.formats.claude_code import looks_like_claude_code, read_session
from ipse.transcript.formats.claude_code_journal import (
    JournaledRequest,
    has_journal,
    read_journal,
)
from ipse.transcript.formats.claude_code_requests import request_thread

# Stands for the system prompt and tools a session file does not record; its size is fitted
# to the recorded usage (`ipse.prefix._report`).
UNRECORDED_FRONT: list[dict[str, Any]] = [
    {
        "type": "text",
        "text": "[system prompt and tool definitions: not recorded in the session]",
        "cache_control": {"type": "ephemeral"},
    }
]


class Request(msgspec.Struct, frozen=True):
    """One request body with what the log knows about it."""

    index: int  # 0-based position in the log
    body: Mapping[str, Any]
    provider: str  # anthropic | openai
    time: datetime | None = None
    response_start: datetime | None = None
    usage: Mapping[str, Any] | None = None
    source: str = ""
    conversation: str | None = None  # known thread (Claude Code); None: matched by content

    @property
    def model(self) -> str | None:
        value = self.body.get("model")
        return value if isinstance(value, str) else None


class RequestLog(msgspec.Struct):
    """The requests of one input, in log order, and what was noticed reading them."""

    path: Path
    format: str
    requests: list[Request]
    warnings: list[str] = msgspec.field(default_factory=list)


def _provider_of(dialect: str) -> str:
    return codec(dialect).provider


def read_requests(path: str | Path, format: str | None = None) -> RequestLog:
    """Every request of a log, a JSONL of bodies, or a Claude Code session."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    name = format or _sniff(p)
    warnings: list[str] = []
    with no_gc():
        requests = _requests(p, name, warnings)
    kept = [r for r in requests if _has_messages(r, warnings)]
    if not kept:
        raise InputError("no request with messages in this input", path=p)
    checked: dict[int, int] = {}
    fronts: dict[int, Any] = {}
    for request in kept:
        _check_front(request, p, fronts)
        _check_messages(request, p, checked)
    if len(requests) == 1 and name in (*DIALECTS, "http-log") and p.is_file():
        dialect = name if name in DIALECTS else detect(p)  # (a one-line body reads as a log)
        if dialect in DIALECTS and isinstance(kept[0].body, Mapping):
            _read_as_a_body(kept[0].body, dialect, p)
    return RequestLog(p, name, kept, warnings)


def _requests(p: Path, name: str, warnings: list[str]) -> list[Request]:
    if name == "claude-code":
        requests = list(_session_requests(p, warnings))
    elif name == "http-log":
        requests = list(_log_requests(p, warnings))
    elif name == "codex":
        requests = list(_rollout_requests(p, warnings))
    elif name in DIALECTS:
        body = parse_json(read_text_bytes(p), p)
        if not isinstance(body, Mapping):
            raise InputError("a request body must be a JSON object", path=p)
        requests = [Request(0, body, _provider_of(name), source=str(p))]
    elif name in WRITABLE_FORMATS:  # a harness file holding one conversation: its request
        from ipse.transcript._load import load  # (the loader knows every reader: on use)

        conversation = load(p, name).current()
        body = write(conversation)
        requests = [Request(0, body, _provider_of(conversation.dialect), source=str(p))]
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
        if isinstance(value, Mapping):
            if looks_like_claude_code(value):
                return "claude-code"
            if "request" in value or isinstance(value.get("messages"), list):
                return "http-log"  # a one-line request body reads as a log of one request
    return detect(p)


def _has_messages(request: Request, warnings: list[str]) -> bool:
    if isinstance(request.body, SharedHistory) and (request.body.count or request.body.tail):
        return True
    if body_codec(request.body, request.provider).positions(request.body).messages:
        return True
    warnings.append(f"request {request.index} ({request.source}) has no messages; skipped")
    return False


# ---------------------------------------------------------------------------------- http logs


class Interner:
    """Shares one object among equal parts of different requests (same bytes, same object).

    A log repeats its tools, its system prompt and its history in every request; parsed
    separately, each copy costs memory and garbage-collector time. Interning keeps the first
    copy of each and lets the rest go, and lets the flattener recognise repeats by identity.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[int, bytes], list[tuple[bytes, Any]]] = {}

    def one(self, value: Any) -> Any:
        data = jsonio.dumps(value)
        bucket = self._seen.setdefault((len(data), data[-64:]), [])
        for seen, obj in bucket:
            if seen == data:  # a byte comparison: memcmp, cheaper than hashing
                return obj
        bucket.append((data, value))
        return value

    def body(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The body with its tools, system prompt and messages (or input items) interned."""
        out = dict(body)
        for key in ("tools", "system"):
            if isinstance(out.get(key), list):
                out[key] = self.one(out[key])
        for key in ("messages", "input"):
            messages = out.get(key)
            if isinstance(messages, list):
                out[key] = [self.one(m) for m in messages]
        return out


def _log_requests(p: Path, warnings: list[str]) -> Iterator[Request]:
    from ipse.transcript.formats import http_log  # (each format's reader imported on use)

    interner = Interner()
    for index, (where, entry) in enumerate(http_log.iter_entries(p, warnings=warnings)):
        fields = http_log.exchange_fields(entry, where)
        body = fields.body
        if "count_tokens" in (fields.url or ""):
            body = {k: v for k, v in body.items() if k != "messages"}  # not a conversation turn
        yield Request(
            index,
            interner.body(body),
            _provider_of(fields.provider),
            fields.time,
            fields.response_time or fields.time,
            fields.usage,
            where,
        )


# ------------------------------------------------------------------------------ codex rollouts


def _rollout_requests(p: Path, warnings: list[str]) -> Iterator[Request]:
    """One Responses request per model call of a Codex rollout, with the recorded usage
    (``cached_input_tokens`` of the ``token_count`` event that followed it)."""
    from ipse.transcript.formats import codex

    for index, call in enumerate(codex.rollout_requests(p, warnings=warnings, shared=True)):
        assert call.history is not None
        yield Request(
            index,
            SharedHistory(call.body, call.history, call.count, key="input"),
            "openai",
            parse_time(call.time),
            parse_time(call.response_time),
            call.usage,
            f"{p}:line {call.line}",
            "main",
        )


# ----------------------------------------------------------------------------- claude code


def _session_requests(p: Path, warnings: list[str]) -> Iterator[Request]:
    session = read_session(p, warnings=warnings)
    lifetime.keep(session)  # (a one-shot command need not free it record by record)
    thread = request_thread(session)
    dicts_of = [[m.body for m in segment] for segment in thread.segments]
    records = session.records
    journal = (
        read_journal(records, (m for dicts in dicts_of for m in dicts))
        if has_journal(records)
        else {}
    )
    index = 0
    fronts: dict[Any, dict[str, Any]] = {}  # one front per model, shared by its requests
    for messages, dicts in zip(thread.segments, dicts_of, strict=True):
        for k, message in enumerate(messages):
            if message.body["role"] != "assistant" or k == 0:
                continue
            meta = message.meta
            model = meta.get("model")
            if model == "<synthetic>":
                continue
            journaled = journal.get(str(meta.get("request_ref")))
            if journaled is not None:
                request_body = _journaled_body(journaled, model, dicts, k)
            else:
                front = fronts.get(model) if isinstance(model, str | None) else None
                if front is None:
                    front = {
                        "model": model,
                        "system": UNRECORDED_FRONT,
                        "cache_control": {"type": "ephemeral"},
                    }
                    if isinstance(model, str | None):
                        fronts[model] = front
                request_body = SharedHistory(front, dicts, k, checked=True)
            previous = messages[k - 1].meta.get("timestamp")
            usage = meta.get("usage")
            yield Request(
                index,
                request_body,
                "anthropic",
                parse_time(previous),
                parse_time(meta.get("timestamp")),
                usage if isinstance(usage, Mapping) else None,
                f"{p}:message {k}",
                thread.name,
            )
            index += 1


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
    """A breakpoint's TTL as the flattener reads it (`ipse.prefix._hashing`)."""
    return "1h" if marker.get("ttl") == "1h" else "5m"


def body_provider(body: Mapping[str, Any]) -> str:
    """``anthropic`` or ``openai``, by the body's shape."""
    return _provider_of(body_dialect(body))
