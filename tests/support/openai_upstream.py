"""A scripted OpenAI upstream for tests: Chat Completions and Responses on a loopback HTTP server.

It records every request (path, headers, JSON body) and answers as the API documents:
``POST /v1/chat/completions`` with a ``chat.completion`` object, or for ``stream: true``
``chat.completion.chunk`` events (``data: ...``), a usage chunk when
``stream_options.include_usage`` asks for it, and ``data: [DONE]``; ``POST /v1/responses``
with a ``response`` object, or the event sequence ``response.created``,
``response.output_item.added``, ``response.output_text.delta``, ``response.output_item.done``,
``response.completed``. A reply is a text or
``{"text": ..., "tool_call": {"id", "name", "arguments"}}``, or on the Responses API
``{"text": ..., "custom_tool_call": {"id", "name", "input"}}`` (a freeform tool call, such as
Codex's ``exec`` code tool, streamed as ``response.custom_tool_call_input.delta``), with
``"close_after": N`` to close the connection after N streamed events (each request takes the
next reply; the last repeats). Instead of a list, ``replies`` may be a function of the request
body that returns the reply. Every response and output item has an id of its own, as the API's.
"""

from __future__ import annotations

import itertools
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

    def bodies(self, suffix: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.received if r["path"].split("?")[0].endswith(suffix)]


def _spec(reply: Reply) -> dict[str, Any]:
    return {"text": reply} if isinstance(reply, str) else dict(reply)


def _chat_usage() -> dict[str, Any]:
    return {
        "prompt_tokens": 10,
        "completion_tokens": 3,
        "total_tokens": 13,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def _chat(reply: Reply, model: str) -> dict[str, Any]:
    spec = _spec(reply)
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("text") or None}
    call = spec.get("tool_call")
    if call:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
        ],
        "usage": _chat_usage(),
    }


def _chat_chunks(reply: Reply, model: str, usage: bool) -> Iterator[dict[str, Any]]:
    spec = _spec(reply)
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }
    yield {
        **base,
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        ],
    }
    if spec.get("text"):
        yield {
            **base,
            "choices": [{"index": 0, "delta": {"content": spec["text"]}, "finish_reason": None}],
        }
    call = spec.get("tool_call")
    if call:
        delta = {
            "tool_calls": [
                {
                    "index": 0,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
            ]
        }
        yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {
        **base,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if call else "stop"}],
    }
    if usage:
        yield {**base, "choices": [], "usage": _chat_usage()}


def _response(
    reply: Reply, model: str, status: str = "completed", serial: int = 0, input_tokens: int = 10
) -> dict[str, Any]:
    spec = _spec(reply)
    output: list[dict[str, Any]] = []
    tail = f"_{serial:04d}" if serial else ""
    if spec.get("text") or not (spec.get("tool_call") or spec.get("custom_tool_call")):
        output.append(
            {
                "type": "message",
                "id": f"msg_scripted{tail}",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": spec.get("text", ""), "annotations": []}
                ],
            }
        )
    call = spec.get("tool_call")
    if call:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_scripted{tail}",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
                "status": "completed",
            }
        )
    custom = spec.get("custom_tool_call")
    if custom:
        output.append(
            {
                "type": "custom_tool_call",
                "id": f"ctc_scripted{tail}",
                "call_id": custom["id"],
                "name": custom["name"],
                "input": custom["input"],
                "status": "completed",
            }
        )
    return {
        "id": f"resp_scripted{tail}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + 3,
        },
    }


def _response_events(
    reply: Reply, model: str, serial: int = 0, input_tokens: int = 10
) -> Iterator[tuple[str, dict[str, Any]]]:
    final = _response(reply, model, serial=serial, input_tokens=input_tokens)
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    n = 0
    yield (
        "response.created",
        {"type": "response.created", "sequence_number": n, "response": started},
    )
    for index, item in enumerate(final["output"]):
        n += 1
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        if item["type"] == "custom_tool_call":
            added["input"] = ""
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": n,
                "output_index": index,
                "item": added,
            },
        )
        if item["type"] == "message":
            n += 1
            yield (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": n,
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": item["content"][0]["text"],
                    "logprobs": [],
                },
            )
        if item["type"] == "custom_tool_call":
            n += 1
            yield (
                "response.custom_tool_call_input.delta",
                {
                    "type": "response.custom_tool_call_input.delta",
                    "sequence_number": n,
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": item["input"],
                },
            )
            n += 1
            yield (
                "response.custom_tool_call_input.done",
                {
                    "type": "response.custom_tool_call_input.done",
                    "sequence_number": n,
                    "item_id": item["id"],
                    "output_index": index,
                    "input": item["input"],
                },
            )
        n += 1
        yield (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "sequence_number": n,
                "output_index": index,
                "item": item,
            },
        )
    n += 1
    yield (
        "response.completed",
        {"type": "response.completed", "sequence_number": n, "response": final},
    )


def _handler(
    upstream: Upstream, replies: Replies, sized: bool = False
) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    answered = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else {}
            with lock:
                upstream.received.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body, "raw": raw}
                )
                turn = len(upstream.received) - 1
            reply = replies(body) if callable(replies) else replies[min(turn, len(replies) - 1)]
            model = str(body.get("model", "gpt"))
            path = self.path.split("?")[0]
            if path.endswith("/chat/completions"):
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    chunks = ((None, c) for c in _chat_chunks(reply, model, usage))
                    self._events(chunks, close_after=_spec(reply).get("close_after"))
                else:
                    self._json(200, _chat(reply, model))
            elif path.endswith("/responses"):
                serial = next(answered)
                tokens = len(raw) // 4 if sized else 10
                if body.get("stream"):
                    self._events(
                        _response_events(reply, model, serial, tokens),
                        done=False,
                        close_after=_spec(reply).get("close_after"),
                    )
                else:
                    self._json(200, _response(reply, model, serial=serial, input_tokens=tokens))
            else:
                error = {
                    "message": f"no route {path}",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
                self._json(404, {"error": error})

        def _json(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _events(self, events: Any, done: bool = True, close_after: int | None = None) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for n, (name, data) in enumerate(events):
                if close_after is not None and n >= close_after:
                    self.close_connection = True
                    return
                head = f"event: {name}\n" if name else ""
                self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            if done:
                self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return Handler


@contextmanager
def openai_upstream(replies: Replies = ("OK.",), *, sized: bool = False) -> Iterator[Upstream]:
    """Serve on a free loopback port for the duration of the ``with`` block. With ``sized``, a
    Responses answer's usage reports the request's input tokens as the API does, growing with
    the body (its bytes / 4); else a fixed 10."""
    upstream = Upstream(url="")
    with serve(_handler(upstream, replies, sized)) as url:
        upstream.url = url
        yield upstream
