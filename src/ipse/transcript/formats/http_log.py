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
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import orjson

from ipse.errors import InputError
from ipse.transcript.formats import anthropic, openai_chat
from ipse.transcript.jsonl import iter_jsonl, parse_json, read_text_bytes
from ipse.transcript.model import Conversation, Dialect
from ipse.transcript.sniff import body_dialect

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

    @property
    def model(self) -> str | None:
        return self.request.model


def read_http_log(
    path: str | Path, *, skip_bad_lines: bool = False, warnings: list[str] | None = None
) -> list[Exchange]:
    """Every exchange of a log file or folder, in log order."""
    p = Path(path)
    sink = warnings if warnings is not None else []
    entries: list[tuple[str, Mapping[str, Any]]] = []
    if p.is_dir():
        files = sorted(p.glob("*.json"), key=_natural_key)
        if not files:
            raise InputError("a folder with no .json files", path=p)
        for file in files:
            value = parse_json(read_text_bytes(file), file)
            if not isinstance(value, Mapping):
                raise InputError("an exchange must be a JSON object", path=file)
            entries.append((str(file), value))
    else:
        data = read_text_bytes(p)
        document = _whole_json(data)
        if isinstance(document, Mapping) and isinstance(document.get("log"), Mapping):
            entries.extend(_har_entries(document, p))
        elif isinstance(document, Mapping):
            entries.append((str(p), document))
        elif isinstance(document, list):
            entries.extend((f"{p}:item {i}", e) for i, e in enumerate(document))
        else:
            for record in iter_jsonl(data, p, skip_bad_lines=skip_bad_lines, warnings=sink):
                entries.append((f"{p}:line {record.line}", record.data))
    return [_exchange(i, where, entry) for i, (where, entry) in enumerate(entries)]


def _whole_json(data: bytes) -> Any:
    """The document when the bytes are one JSON value spanning several lines; else None."""
    stripped = data.strip()
    if b"\n" in stripped and stripped[:1] in (b"{", b"["):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return None
    if b"\n" not in stripped:
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return None
    return None


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _har_entries(
    document: Mapping[str, Any], path: Path
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    entries = document["log"].get("entries")
    if not isinstance(entries, list):
        raise InputError("a HAR file without log.entries", path=path)
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        request = entry.get("request") or {}
        if str(request.get("method", "POST")).upper() != "POST":
            continue
        yield f"{path}:entry {i}", entry


def _exchange(index: int, where: str, entry: Mapping[str, Any]) -> Exchange:
    request = entry.get("request")
    response = entry.get("response")
    if isinstance(request, Mapping):
        body = _body_of(request, where, "request")
        url = request.get("url") or request.get("path")
    elif isinstance(entry.get("messages"), list):  # a bare request body
        body = {k: v for k, v in entry.items() if k not in ("ts", "usage", "time", "response")}
        url = None
        response = {"usage": entry["usage"]} if isinstance(entry.get("usage"), Mapping) else None
    else:
        raise InputError(
            "an exchange needs a 'request' (or a bare request body)", position=None, path=where
        )
    if not isinstance(body, Mapping):
        raise InputError("the request body is not a JSON object", path=where)
    provider = _provider(url, body)
    reader = anthropic.read_body if provider == "anthropic" else openai_chat.read_body
    conversation = reader(body, source=where)
    usage, status, response_time = None, None, None
    if isinstance(response, Mapping):
        usage = _usage(response, where)
        status_value = response.get("status")
        status = (
            int(status_value)
            if isinstance(status_value, int | str) and str(status_value).isdigit()
            else None
        )
        response_time = _time_of(response) or _header_date(response.get("headers"))
    time = _time_of(entry) or (_time_of(request) if isinstance(request, Mapping) else None)
    if time is None and response_time is not None:
        time = response_time
    return Exchange(
        index=index,
        request=conversation,
        provider=provider,
        time=time,
        response_time=response_time,
        usage=usage,
        status=status,
        url=str(url) if url else None,
        source=where,
        body=body,
    )


def _body_of(part: Mapping[str, Any], where: str, what: str) -> Any:
    for key in ("body", "content", "postData", "json", "data"):
        if key in part:
            value = part[key]
            if key == "postData" and isinstance(value, Mapping):
                value = value.get("text")
            if key == "content" and isinstance(value, Mapping) and _is_har_content(value):
                value = _har_text(value)
            if isinstance(value, str | bytes):
                text = value.decode() if isinstance(value, bytes) else value
                if what == "response":
                    return text
                try:
                    return orjson.loads(text)
                except orjson.JSONDecodeError as exc:
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


def _provider(url: Any, body: Mapping[str, Any]) -> Dialect:
    text = str(url or "")
    if "/v1/messages" in text or "anthropic" in text:
        return "anthropic"
    if "chat/completions" in text:
        return "openai-chat"
    return body_dialect(body)


def _usage(response: Mapping[str, Any], where: str) -> Mapping[str, Any] | None:
    if isinstance(response.get("usage"), Mapping):
        return dict(response["usage"])
    body = _body_of(response, where, "response")
    if isinstance(body, Mapping):
        return _usage_of_json(body)
    if isinstance(body, str):
        stripped = body.lstrip()
        if stripped.startswith(("event:", "data:", ":")):
            return _usage_of_sse(body)
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return _usage_of_json(parsed) if isinstance(parsed, Mapping) else None
    return None


def _usage_of_json(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    usage = body.get("usage")
    return dict(usage) if isinstance(usage, Mapping) else None


def _usage_of_sse(text: str) -> Mapping[str, Any] | None:
    usage: dict[str, Any] = {}
    found = False
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, Mapping):
            continue
        if event.get("type") == "message_start" and isinstance(event.get("message"), Mapping):
            start = event["message"].get("usage")
            if isinstance(start, Mapping):
                usage.update(start)
                found = True
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), Mapping):
            # The delta's usage is cumulative over server-tool iterations; the request's own
            # input usage is the one in message_start. Take the output count, and any field
            # message_start did not carry.
            for key, value in event["usage"].items():
                if value is not None and (key == "output_tokens" or key not in usage):
                    usage[key] = value
            found = True
        elif isinstance(event.get("usage"), Mapping):  # OpenAI's final chunk
            usage.update(event["usage"])
            found = True
    return usage if found else None


def _time_of(part: Mapping[str, Any]) -> datetime | None:
    for key in _TIME_KEYS:
        if key in part:
            parsed = parse_time(part[key])
            if parsed is not None:
                return parsed
    return None


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 string or a Unix time (seconds or milliseconds) as an aware datetime."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, tz=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _header_date(headers: Any) -> datetime | None:
    if isinstance(headers, Mapping):
        items: list[tuple[Any, Any]] = list(headers.items())
    elif isinstance(headers, list):  # HAR: [{"name", "value"}]
        items = [(h.get("name"), h.get("value")) for h in headers if isinstance(h, Mapping)]
    else:
        return None
    for name, value in items:
        if str(name).lower() == "date" and isinstance(value, str):
            try:
                return parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
    return None
