"""Logs of HTTP exchanges with an LLM API: a sequence of requests with their time and usage.

Accepted shapes:

* JSONL, one ``{"request": ..., "response": ...}`` per line;
* JSONL of bare request bodies (``{"model", "messages", ...}``), each with optional ``ts`` and
  ``usage`` beside the body's own keys;
* a folder of JSON files, one exchange each (read in natural name order: 2.json before 10.json);
* a HAR file (``log.entries``).

A request body sits under ``body``, ``content`` or ``postData.text``, as a JSON string or an
object; a response body likewise, as JSON or as server-sent events, from which ``usage`` is
taken (Anthropic ``message_start`` and ``message_delta``; OpenAI's final chunk). Times come from
the exchange (``ts``, ``time``, ``timestamp``, ``startedDateTime``) or the response's ``Date``
header. Each request is read by the reader for its provider, chosen by its URL or its shape.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._os_errors import os_error
from ipse.errors import InputError
from ipse.transcript._codec import codec
from ipse.transcript._jsonl import (
    BAD_LINE,
    NOT_AN_OBJECT,
    check_text_head,
    parse_json,
    read_text_bytes,
    unterminated,
)
from ipse.transcript._model import Conversation, Dialect
from ipse.transcript._sniff import body_dialect
from ipse.transcript._time import parse_time

_TIME_KEYS = ("ts", "time", "timestamp", "startedDateTime", "started_at", "request_time")


@dataclass(frozen=True)
class Exchange:
    """One recorded request with what is known about it."""

    index: int
    request: Conversation
    provider: Dialect
    time: datetime | None = None
    response_time: datetime | None = None
    usage: Mapping[str, Any] | None = None
    status: int | None = None
    url: str | None = None
    source: str = ""
    body: Mapping[str, Any] = field(default_factory=dict, repr=False)
    conversation: str | None = None  # `entry_conversation`

    @property
    def model(self) -> str | None:
        return self.request.model


def read_http_log(
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    warnings: list[str] | None = None,
    others: dict[str, int] | None = None,
) -> list[Exchange]:
    """Every exchange of a log file or folder, in log order; ``index`` is the position in the
    log. Requests that are not conversation turns (token counting, model listings, a client's
    ``HEAD /``, a body that is not JSON) are skipped with a warning, and counted in ``others``
    by what they were (`other_label`)."""
    exchanges = []
    sink = warnings if warnings is not None else []
    counts = others if others is not None else {}
    entries = iter_entries(path, skip_bad_lines=skip_bad_lines, warnings=sink)
    for index, (where, entry) in enumerate(entries):
        fields = exchange_fields(entry, where)
        if "count_tokens" in (fields.url or ""):
            sink.append(f"{where}: request {index} counts tokens (not a conversation turn)")
            _count(counts, other_label(fields))
            continue
        if fields.no_body is not None:
            sink.append(
                f"{where}: request {index} ({other_label(fields)}) has {fields.no_body} "
                "(not a conversation turn)"
            )
            _count(counts, other_label(fields))
            continue
        if not codec(fields.provider).positions(fields.body).messages:
            sink.append(f"{where}: request {index} has no messages (not a conversation turn)")
            _count(counts, other_label(fields))
            continue
        exchanges.append(
            Exchange(
                index=index,
                request=codec(fields.provider).read_body(fields.body, source=where),
                provider=fields.provider,
                time=fields.time,
                response_time=fields.response_time,
                usage=fields.usage,
                status=fields.status,
                url=fields.url,
                source=where,
                body=fields.body,
                conversation=entry_conversation(entry, fields.body),
            )
        )
    return exchanges


def entry_conversation(entry: Mapping[str, Any], body: Mapping[str, Any]) -> str | None:
    """The conversation an exchange belongs to: the one a proxy's record names (its key for
    the conversation, ``ipse.conversation``), else the harness's session its headers carry
    (`ipse._sessions.request_session`); None when neither says. A record collects every session
    that went through the proxy: readers keep each conversation's requests together."""
    from ipse._sessions import request_session  # (light; asked only of logs)

    extra = entry.get("ipse")
    named = extra.get("conversation") if jsonio.is_object(extra) else None
    if isinstance(named, str) and named:
        return named
    request = entry.get("request")
    headers = request.get("headers") if jsonio.is_object(request) else None
    if not jsonio.is_object(headers):
        return request_session({}, body)
    return request_session({str(k): str(v) for k, v in headers.items()}, body)


@dataclass(frozen=True, slots=True)
class ExchangeFields:
    """What one log entry says about its request, before the body is read into the model."""

    body: Mapping[str, Any]
    provider: Dialect
    url: str | None
    time: datetime | None
    response_time: datetime | None
    usage: Mapping[str, Any] | None
    status: int | None
    method: str | None = None
    no_body: str | None = None  # why there is no JSON body object (then ``body`` is empty)


def other_label(fields: ExchangeFields) -> str:
    """What an exchange that is not a conversation turn was: its method and path
    (``HEAD /``, ``POST /v1/messages/count_tokens``)."""
    url = fields.url or ""
    path = url.split("://", 1)[1] if "://" in url else url
    if "://" in url:
        path = "/" + path.split("/", 1)[1] if "/" in path else "/"
    return f"{(fields.method or 'POST').upper()} {path.split('?', 1)[0] or '/'}"


def _count(counts: dict[str, int], label: str) -> None:
    counts[label] = counts.get(label, 0) + 1


def iter_entries(
    path: str | Path, *, skip_bad_lines: bool = False, warnings: list[str] | None = None
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The raw entries of a log, each with where it stands, in log order.

    JSONL is read line by line (a log can be far larger than memory would like); a folder,
    a HAR file, a JSON array or a single exchange is read whole.
    """
    p = Path(path)
    sink = warnings if warnings is not None else []
    if p.is_dir():
        files = sorted(p.glob("*.json"), key=_natural_key)
        if not files:
            raise InputError("a folder with no .json files", path=p)
        for file in files:
            value = parse_json(read_text_bytes(file), file)
            if not isinstance(value, Mapping):
                raise InputError("an exchange must be a JSON object", path=file)
            yield str(file), value
        return
    check_text_head(p)
    first = _first_line_value(p)
    if isinstance(first, Mapping) and not isinstance(first.get("log"), Mapping):
        yield from _stream_jsonl(p, skip_bad_lines, sink)
        return
    document = parse_json(read_text_bytes(p), p)
    if isinstance(document, Mapping) and isinstance(document.get("log"), Mapping):
        yield from _har_entries(document, p)
    elif isinstance(document, Mapping):
        yield str(p), document
    elif isinstance(document, list):
        for i, item in enumerate(document):
            if not isinstance(item, Mapping):
                raise InputError("an exchange must be a JSON object", path=p, position=f"item {i}")
            yield f"{p}:item {i}", item
    else:
        raise InputError("a log must hold JSON objects", path=p)


def _first_line_value(p: Path) -> Any:
    """The first non-blank line parsed, or None when it is not JSON on its own."""
    try:
        with p.open("rb") as handle:
            for line in handle:
                if line.strip():
                    try:
                        return jsonio.loads(line)
                    except jsonio.JSONDecodeError:
                        return None
    except OSError as exc:
        raise os_error(exc, "read", p) from exc
    return None


def _stream_jsonl(
    p: Path, skip_bad_lines: bool, warnings: list[str]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise os_error(exc, "read", p) from exc
    with handle:
        for number, line in enumerate(handle, start=1):
            if line.isspace():
                continue
            try:
                value = jsonio.loads(line)
            except jsonio.JSONDecodeError as exc:
                if unterminated(line, number, p, warnings):
                    continue
                if skip_bad_lines:
                    warnings.append(f"{p}:line {number}: skipped a line that is not JSON")
                    continue
                raise InputError(BAD_LINE, path=p, position=f"line {number}") from exc
            if not isinstance(value, Mapping):
                if unterminated(line, number, p, warnings):
                    continue
                if skip_bad_lines:
                    warnings.append(f"{p}:line {number}: skipped a line that is not an object")
                    continue
                raise InputError(NOT_AN_OBJECT, path=p, position=f"line {number}")
            yield f"{p}:line {number}", value


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _har_entries(
    document: Mapping[str, Any], path: Path
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    entries = document["log"].get("entries")
    if not isinstance(entries, list):
        raise InputError("a HAR file without log.entries", path=path)
    for i, entry in enumerate(entries):
        if isinstance(entry, Mapping):  # (a GET is an exchange too: counted, not a turn)
            yield f"{path}:entry {i}", entry


def exchange_fields(entry: Mapping[str, Any], where: str) -> ExchangeFields:
    """The request body, provider, times, usage and status of one log entry."""
    request = entry.get("request")
    if isinstance(request, Mapping):
        body, url, method, no_body = _request_fields(request, where)
        response = entry.get("response")
    elif isinstance(entry.get("messages"), list) or "model" in entry:  # a bare request body
        body = {k: v for k, v in entry.items() if k not in ("ts", "usage", "time", "response")}
        url, method, no_body = None, None, None
        response = {"usage": entry["usage"]} if isinstance(entry.get("usage"), Mapping) else None
    else:
        raise InputError("an exchange needs a 'request' (or a bare request body)", path=where)
    if not isinstance(body, Mapping):
        raise InputError("the request body is not a JSON object", path=where)
    usage, status, response_time = _response_fields(response, where)
    time = time_of(entry) or (time_of(request) if isinstance(request, Mapping) else None)
    return ExchangeFields(
        body=body,
        provider=provider_of(url, body),
        url=str(url) if url else None,
        time=time or response_time,
        response_time=response_time,
        usage=usage,
        status=status,
        method=method,
        no_body=no_body,
    )


def _request_fields(
    request: Mapping[str, Any], where: str
) -> tuple[Mapping[str, Any], Any, str | None, str | None]:
    """A request's body (``{}`` when it has none that is a JSON object), its URL, its method,
    and why it has no body."""
    no_body: str | None = None
    try:
        body = body_of(request, where, "request")
    except InputError:
        body, no_body = {}, "a body that is not JSON"
    if body is None and (isinstance(request.get("messages"), list) or "model" in request):
        body = request  # the request body itself, as a response may be its bare body
    if no_body is None and (body is None or body == ""):
        body, no_body = {}, "no body"
    elif no_body is None and not isinstance(body, Mapping):
        body, no_body = {}, "a body that is not a JSON object"
    method = request.get("method")
    url = request.get("url") or request.get("path")
    return body, url, method if isinstance(method, str) else None, no_body


def _response_fields(
    response: Any, where: str
) -> tuple[Mapping[str, Any] | None, int | None, datetime | None]:
    """A response's usage, status and time."""
    if not isinstance(response, Mapping):
        return None, None, None
    value = response.get("status")
    status = None
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        status = int(value)
    time = time_of(response) or header_date(response.get("headers"))
    return usage_of(response, where), status, time


def body_of(part: Mapping[str, Any], where: str, what: str) -> Any:
    for key in ("body", "content", "postData", "json", "data"):
        if key in part:
            value = part[key]
            if key == "postData" and isinstance(value, Mapping):
                value = value.get("text")
            if key == "content" and isinstance(value, Mapping) and _is_har_content(value):
                value = _har_text(value)
            if isinstance(value, str | bytes):
                text = value.decode(errors="replace") if isinstance(value, bytes) else value
                if what == "response":
                    return text
                if not text.strip():
                    return None  # no body (a GET, a HEAD)
                try:
                    return jsonio.loads(text)
                except jsonio.JSONDecodeError as exc:
                    raise InputError(f"the {what} body is not valid JSON", path=where) from exc
            return value
    return None


_HAR_CONTENT_KEYS = frozenset({"text", "size", "mimeType", "encoding", "compression", "comment"})


def _is_har_content(value: Mapping[str, Any]) -> bool:
    """A HAR ``content`` object (as opposed to a JSON body stored under ``content``)."""
    return "mimeType" in value or (bool(value) and set(value) <= _HAR_CONTENT_KEYS)


def _har_text(content: Mapping[str, Any]) -> str | None:
    """A HAR response's text, decoded when the recorder stored it as base64."""
    text = content.get("text")
    if not isinstance(text, str):
        return None
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text).decode("utf-8", errors="replace")
        except ValueError:
            return None
    return text


def provider_of(url: Any, body: Mapping[str, Any]) -> Dialect:
    """The provider a request went to: by its URL when the log has one, else by its shape."""
    text = str(url or "")
    if "/v1/messages" in text or "anthropic" in text:
        return "anthropic"
    if "chat/completions" in text:
        return "openai-chat"
    if "/responses" in text or ("input" in body and "messages" not in body):
        return "openai-responses"
    model = body.get("model")
    if not text and isinstance(model, str) and model.startswith("claude"):
        return "anthropic"
    return body_dialect(body)


def usage_of(response: Mapping[str, Any], where: str) -> Mapping[str, Any] | None:
    if isinstance(response.get("usage"), Mapping):
        return dict(response["usage"])
    body = body_of(response, where, "response")
    if isinstance(body, Mapping):
        return _usage_of_json(body)
    if isinstance(body, str):
        stripped = body.lstrip()
        if stripped.startswith(("event:", "data:", ":")):
            return _usage_of_sse(body)
        try:
            parsed = jsonio.loads(body)
        except jsonio.JSONDecodeError:
            return None
        return _usage_of_json(parsed) if isinstance(parsed, Mapping) else None
    return None


def _usage_of_json(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    usage = body.get("usage")
    return dict(usage) if isinstance(usage, Mapping) else None


def exchange_record(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: Any,
    client_body: Any = None,
    status: int | None,
    response_headers: Mapping[str, str],
    response_body: bytes,
    started: float,
    first_byte: float | None,
    finished: float,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One exchange as a log entry this module reads back (a line of a proxy's record).

    ``body`` is what went upstream (the rewritten body when there was a handoff), so replaying
    the log sees what the provider's cache saw; ``client_body`` is what the client sent, given
    only when it differs. ``headers`` must already be free of credentials. The response body is
    kept as JSON when it parses, else as text (server-sent events). Times are Unix seconds.
    """
    text = response_body.decode("utf-8", errors="replace")
    response_value: Any = text
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            response_value = jsonio.loads(text)
        except jsonio.JSONDecodeError:
            response_value = text
    request: dict[str, Any] = {"method": method, "url": url, "headers": dict(headers)}
    request["body"] = body
    entry: dict[str, Any] = {"ts": _iso(started), "request": request}
    if client_body is not None:
        entry["client_request"] = {"body": client_body}
    response: dict[str, Any] = {"status": status, "headers": dict(response_headers)}
    if first_byte is not None:
        response["ts"] = _iso(first_byte)
    response["body"] = response_value
    entry["response"] = response
    entry["timing"] = {
        "first_byte_ms": None if first_byte is None else round((first_byte - started) * 1000, 3),
        "total_ms": round((finished - started) * 1000, 3),
    }
    if extra:
        entry["ipse"] = dict(extra)
    return entry


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def _usage_of_sse(text: str) -> Mapping[str, Any] | None:
    usage: dict[str, Any] = {}
    found = False
    for line in text.splitlines():
        event = _sse_event(line)
        if event is not None and _add_usage(usage, event):
            found = True
    return usage if found else None


def _sse_event(line: str) -> Mapping[str, Any] | None:
    """The JSON object of a ``data:`` line of an event stream, else None."""
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if not payload or payload == "[DONE]":
        return None
    try:
        event = jsonio.loads(payload)
    except jsonio.JSONDecodeError:
        return None
    return event if isinstance(event, Mapping) else None


def _add_usage(usage: dict[str, Any], event: Mapping[str, Any]) -> bool:
    """Add what a streamed event says of the usage; whether it said anything."""
    kind = event.get("type")
    if kind == "message_start" and isinstance(event.get("message"), Mapping):
        start = event["message"].get("usage")
        if isinstance(start, Mapping):
            usage.update(start)
        return isinstance(start, Mapping)
    if kind == "message_delta" and isinstance(event.get("usage"), Mapping):
        # The delta's usage is cumulative over server-tool iterations; the request's own
        # input usage is the one in message_start. Take the output count, and any field
        # message_start did not carry.
        for key, value in event["usage"].items():
            if value is not None and (key == "output_tokens" or key not in usage):
                usage[key] = value
        return True
    if isinstance(event.get("usage"), Mapping):  # OpenAI's final chunk
        usage.update(event["usage"])
        return True
    response = event.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("usage"), Mapping):
        usage.update(response["usage"])  # OpenAI Responses: response.completed
        return True
    return False


def time_of(part: Mapping[str, Any]) -> datetime | None:
    for key in _TIME_KEYS:
        if key in part:
            parsed = parse_time(part[key])
            if parsed is not None:
                return parsed
    return None


def header_date(headers: Any) -> datetime | None:
    if isinstance(headers, Mapping):
        items: list[tuple[Any, Any]] = list(headers.items())
    elif isinstance(headers, list):  # HAR: [{"name", "value"}]
        items = [(h.get("name"), h.get("value")) for h in headers if isinstance(h, Mapping)]
    else:
        return None
    for name, value in items:
        if str(name).lower() == "date" and isinstance(value, str):
            from email.utils import parsedate_to_datetime  # (imported here: a tenth of start)

            try:
                parsed = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None
