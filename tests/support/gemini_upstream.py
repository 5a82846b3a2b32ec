"""A scripted Gemini API upstream for tests: ``generateContent``, ``streamGenerateContent`` and
``countTokens`` on a loopback HTTP server, as Gemini CLI calls them with
``GOOGLE_GEMINI_BASE_URL`` pointing here.

It records every request (path, headers, JSON body) and answers as the API documents
(ai.google.dev/api/generate-content): ``POST /v1beta/models/{model}:generateContent`` with a
``GenerateContentResponse`` (``candidates[0].content`` of role ``model`` and its ``parts``,
``finishReason``, ``usageMetadata``, ``modelVersion``, ``responseId``);
``:streamGenerateContent?alt=sse`` with the same response as server-sent events (``data: ...``
lines, one chunk per part and the last carrying ``finishReason`` and the usage);
``:countTokens`` with ``{"totalTokens": N}`` (the request's JSON length / 4). A reply is a
text or ``{"text": ..., "function_call": {"name", "args"}}``. Each generate request takes the
next reply (the last repeats); instead of a list, ``replies`` may be a function of the request
body that returns the reply (a request no list entry should answer, such as Gemini CLI's
routing or next-speaker checks, can be told apart by its body there).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.serving import serve

Reply = str | dict[str, Any]
Replies = Sequence[Reply] | Callable[[dict[str, Any]], Reply]


@dataclass
class Upstream:
    url: str
    received: list[dict[str, Any]] = field(default_factory=list)

    def generate_requests(self) -> list[dict[str, Any]]:
        """The bodies of every generate request (streamed or not), in order."""
        return [
            r["body"]
            for r in self.received
            if r["path"].split("?")[0].endswith(("GenerateContent", ":generateContent"))
        ]


def _parts(reply: Reply) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"text": reply} if isinstance(reply, str) else dict(reply)
    parts: list[dict[str, Any]] = []
    if spec.get("text"):
        parts.append({"text": spec["text"]})
    call = spec.get("function_call")
    if call:
        parts.append({"functionCall": {"name": call["name"], "args": call.get("args", {})}})
    return parts or [{"text": ""}]


def _usage(body: dict[str, Any]) -> dict[str, Any]:
    prompt = max(1, len(json.dumps(body)) // 4)
    return {"promptTokenCount": prompt, "candidatesTokenCount": 3, "totalTokenCount": prompt + 3}


def _response(parts: list[dict[str, Any]], model: str, serial: int, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "modelVersion": model, "responseId": f"scripted-{serial}"}


def _handler(upstream: Upstream, replies: Replies) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else {}
            path = self.path.split("?")[0]
            with lock:
                upstream.received.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                turn = len(upstream.generate_requests()) - 1
            model, _, method = path.rsplit("/", 1)[-1].partition(":")
            if method == "countTokens":
                self._json(200, {"totalTokens": max(1, len(raw) // 4)})
                return
            if method not in ("generateContent", "streamGenerateContent"):
                self._json(404, {"error": {"code": 404, "message": f"no route {path}"}})
                return
            reply = replies(body) if callable(replies) else replies[min(turn, len(replies) - 1)]
            parts = _parts(reply)
            if method == "generateContent":
                done = _response(parts, model, turn, True)
                self._json(200, {**done, "usageMetadata": _usage(body)})
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for index, part in enumerate(parts):
                chunk = _response([part], model, turn, index == len(parts) - 1)
                if index == len(parts) - 1:
                    chunk["usageMetadata"] = _usage(body)
                self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                self.wfile.flush()
            self.close_connection = True

        def _json(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def gemini_upstream(replies: Replies = ("OK.",)) -> Iterator[Upstream]:
    """Serve on a free loopback port for the duration of the ``with`` block."""
    upstream = Upstream(url="")
    with serve(_handler(upstream, replies)) as url:
        upstream.url = url
        yield upstream
