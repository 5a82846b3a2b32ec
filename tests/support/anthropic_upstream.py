"""A scripted Anthropic Messages upstream for tests: a real HTTP server on loopback.

It records every request (path, headers, JSON body) and answers ``POST /v1/messages`` as the
API documents: JSON for ``stream: false``; for ``stream: true`` the server-sent event sequence
``message_start``, ``content_block_start``, ``ping``, ``content_block_delta``,
``content_block_stop``, ``message_delta``, ``message_stop``. ``count_tokens`` answers
``{"input_tokens": N}``. Replies are scripted: each request takes the next reply (the last one
repeats). A reply is a text, or a dict: ``{"text": ..., "tool_use": {"id", "name", "input"}}``
(a tool call, ``stop_reason: "tool_use"``, streamed as ``input_json_delta``), ``{"status": 529}``
(the API's error document for that status), ``{"stall": SECONDS, "after": N}`` (N events, then
silence, then the connection closes) or ``{"close_after": N}`` (N events, then the connection
closes without the rest); ``"pace": SECONDS`` waits that long before each event. Instead of a
list, ``replies`` may be a function of the request body that returns the reply (a model that
answers what it is asked, however many requests come). ``answer`` does the same and gives every
message the id ``msg_scripted``, so that `stream_bytes` is exactly the event stream a reply is
sent as (otherwise every message has an id of its own). With ``sized``, each answer's usage
reports the request's input tokens as the API does, growing with the body (its bytes / 4, the
count ``count_tokens`` gives here); else a fixed 10.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.serving import serve


@dataclass
class Upstream:
    """The running server: its URL and what it received."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)

    def messages_requests(self) -> list[dict[str, Any]]:
        """The bodies of the ``/v1/messages`` requests (not count_tokens), in order."""
        return [r["body"] for r in self.received if r["path"].split("?")[0] == "/v1/messages"]


Reply = str | dict[str, Any]
Replies = Sequence[Reply] | Callable[[dict[str, Any]], Reply]
_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _spec(reply: Reply) -> dict[str, Any]:
    return {"text": reply} if isinstance(reply, str) else dict(reply)


def _events(
    reply: Reply, model: str, message_id: str = "msg_scripted", input_tokens: int = 10
) -> Iterator[tuple[str, dict[str, Any]]]:
    spec = _spec(reply)
    text = spec.get("text", "")
    tool = spec.get("tool_use")
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    index = 0
    if text or not tool:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield "ping", {"type": "ping"}
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        )
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    if tool:
        block = {"type": "tool_use", "id": tool["id"], "name": tool["name"], "input": {}}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
        delta = {"type": "input_json_delta", "partial_json": json.dumps(tool["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if tool else "end_turn"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def stream_bytes(reply: Reply, model: str, message_id: str = "msg_scripted") -> bytes:
    """The bytes of the event stream the upstream sends for ``reply`` (all of its events)."""
    return b"".join(_event(name, data) for name, data in _events(reply, model, message_id))


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _handler(
    upstream: Upstream,
    replies: Replies,
    answer: Callable[[dict[str, Any]], Reply] | None = None,
    sized: bool = False,
) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    answered = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._json(200, {"ok": True})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client died mid-request (a killed proxy): no request
                self.close_connection = True
                return
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                error = {"type": "invalid_request_error", "message": "body is not valid JSON"}
                self._json(400, {"type": "error", "error": error})
                return
            with lock:
                upstream.received.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body, "raw": raw}
                )
                turn = len(upstream.messages_requests()) - 1
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._json(200, {"input_tokens": len(raw) // 4})
            elif path == "/v1/messages":
                if answer is not None:
                    reply = answer(body)
                elif callable(replies):
                    reply = replies(body)
                else:
                    reply = replies[min(max(turn, 0), len(replies) - 1)]
                spec = _spec(reply)
                model = str(body.get("model", "claude"))
                # every message the API answers has an id of its own (Claude Code groups the
                # records of one response by it when it resumes a session)
                message_id = (
                    "msg_scripted" if answer is not None else f"msg_scripted_{next(answered):04d}"
                )
                if "status" in spec:
                    kind = _ERRORS.get(spec["status"], "api_error")
                    error = {"type": kind, "message": f"scripted {spec['status']}"}
                    self._json(spec["status"], {"type": "error", "error": error})
                elif body.get("stream"):
                    self._stream(reply, model, message_id, len(raw) // 4 if sized else 10)
                else:
                    tokens = len(raw) // 4 if sized else 10
                    self._json(200, _message(reply, model, message_id, tokens))
            else:
                error = {"type": "not_found_error", "message": self.path}
                self._json(404, {"type": "error", "error": error})

        def _json(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Reply, model: str, message_id: str, tokens: int) -> None:
            spec = _spec(reply)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            stop_after = spec.get("after", spec.get("close_after"))
            pace = float(spec.get("pace", 0))
            for n, (name, data) in enumerate(_events(reply, model, message_id, tokens)):
                if stop_after is not None and n >= stop_after:
                    if "stall" in spec:
                        time.sleep(spec["stall"])
                    break
                if pace:
                    time.sleep(pace)
                try:
                    self.wfile.write(_event(name, data))
                    self.wfile.flush()
                except OSError:  # the proxy went away (a replica killed mid-stream)
                    break
            self.close_connection = True

    return Handler


def _message(
    reply: Reply, model: str, message_id: str = "msg_scripted", input_tokens: int = 10
) -> dict[str, Any]:
    spec = _spec(reply)
    content: list[dict[str, Any]] = []
    if spec.get("text") or not spec.get("tool_use"):
        content.append({"type": "text", "text": spec.get("text", "")})
    if spec.get("tool_use"):
        content.append({"type": "tool_use", **spec["tool_use"]})
    stop = "tool_use" if spec.get("tool_use") else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 3},
    }


@contextmanager
def anthropic_upstream(
    replies: Replies = ("OK.",),
    *,
    answer: Callable[[dict[str, Any]], Reply] | None = None,
    sized: bool = False,
) -> Iterator[Upstream]:
    """Serve on a free loopback port for the duration of the ``with`` block."""
    upstream = Upstream(url="")
    with serve(_handler(upstream, replies, answer, sized)) as url:
        upstream.url = url
        yield upstream
