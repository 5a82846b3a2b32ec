"""The proxy application: routes, the rewrite hook, streaming pass-through, bookkeeping.

One Starlette route takes every path. A ``POST`` to a route whose body ipse understands
(Anthropic ``/v1/messages`` and ``/v1/messages/count_tokens``, OpenAI ``.../chat/completions``
and ``.../responses``) is handed to `ipse.handoff.rewrite_request` when its bytes name a
checkpoint tool; every other request, and every body the handoff leaves alone, goes upstream
byte for byte. The response streams back as it arrives (``aiter_raw``: nothing is buffered or
decoded), through one shared `httpx.AsyncClient`.

A client that disconnects cancels the upstream request: the response listens for the disconnect
whatever ASGI version the server speaks, and closes the upstream stream, shielded from the
cancellation. Upstream failures before the response began become the provider's error document
with a fitting status (502 unreachable, 504 timed out); after it began, a server-sent ``error``
event.

What is not on the request's path runs on one bookkeeping thread, in completion order: the
conversation store (anchor, counters), the archive of what a handoff removed, the record file,
and the log line with the prefix cache model's prediction. Closing the app drains that thread,
so no record is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from ipse import __version__, _notes, jsonio
from ipse.errors import MissingExtra
from ipse.handoff import Rewrite, conversation_key, rewrite_request
from ipse.proxy._config import ProxyConfig
from ipse.proxy._record import Recorder, log_line
from ipse.proxy._wire import (
    Provider,
    dialect_of,
    error_body,
    error_event,
    masked,
    provider_of,
    request_headers,
    response_headers,
)

try:
    import anyio
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("proxy", exc.name or "starlette") from exc

_log = _notes.logger("ipse.proxy")
HEALTH_PATH = "/ipse/health"
SERVICE = "ipse-proxy"
_USAGE_CAP = 8 * 1024 * 1024  # bytes of a response kept to read usage (all when recording)
_INLINE_REWRITE = 256 * 1024  # smaller bodies are rewritten on the event loop
_ANALYSIS_BACKLOG = 32  # bookkeeping tasks waiting beyond which the cache analysis is skipped
_PREVIOUS_MAX = 128  # conversations whose previous request is kept for the cache model
_PREVIOUS_BYTES = 128 * 1024 * 1024


@dataclass
class _Exchange:
    """One finished request, for the bookkeeping thread."""

    method: str
    path: str
    query: str
    provider: Provider
    dialect: str | None
    key: str | None
    headers: list[tuple[str, str]]
    client_body: bytes
    sent_body: bytes
    parsed: Any
    rewrite: Rewrite | None
    status: int | None
    response_headers: list[tuple[str, str]]
    chunks: list[bytes] = field(default_factory=list)
    started: float = 0.0
    first_byte: float | None = None
    finished: float = 0.0
    error: str | None = None
    disconnected: bool = False
    tokens_saved: int | None = None  # set by the bookkeeping thread


class _QueuedArchive:
    """The handoff's archive sink: puts go to the bookkeeping thread (off the request path)."""

    def __init__(self, state: ProxyState) -> None:
        self._state = state

    def put(self, session: str, removed: Sequence[Any], source: str) -> int:
        items = tuple(removed)
        self._state.submit(partial(self._state.archive_put, session, items, source))
        return len(items)


# httpcore's pool checks every pooled connection (a poll() each) whenever a request is assigned
# or released: the cost grows with the pool, and 50 concurrent streams spent most of the proxy's
# time there (cProfile, bench/proxy.py). Requests spread over a few smaller pools instead.
_SHARDS = 16


class _Sharded(httpx.AsyncBaseTransport):
    """Round-robin over several connection pools (see `_SHARDS`)."""

    def __init__(self, transports: Sequence[httpx.AsyncHTTPTransport]) -> None:
        self._transports = list(transports)
        self._next = itertools.cycle(self._transports)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await next(self._next).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self._transports:
            await transport.aclose()


class ProxyState:
    """What lives as long as the app: the client, the stores, the record, the counters."""

    def __init__(self, config: ProxyConfig, log_stream: TextIO | None = None) -> None:
        self.config = config
        self.client: httpx.AsyncClient | None = None
        self.inflight = 0
        self.requests = 0
        self.anchors: OrderedDict[str, str] = OrderedDict()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipse-proxy-books")
        self._store: Any = None
        self._archive: Any = None
        self._recorder = Recorder(config.record) if config.record is not None else None
        # each conversation's previous request, for the cache model (bounded in count and bytes)
        self._previous: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._saved: OrderedDict[tuple[Any, ...], int] = OrderedDict()  # tokens saved, per prefix
        self._previous_bytes = 0
        self._counter = itertools.count()
        self._log_stream = log_stream
        self._lock = threading.Lock()
        self.archive_sink = _QueuedArchive(self)
        self.pending = 0

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        timeout = httpx.Timeout(
            connect=self.config.connect_timeout,
            read=self.config.read_timeout,
            write=60.0,
            pool=self.config.connect_timeout,
        )
        per_shard = httpx.Limits(
            max_connections=1000 // _SHARDS, max_keepalive_connections=100 // _SHARDS
        )
        # Headers and body leave in two writes: without TCP_NODELAY the body waits for the
        # upstream's delayed ACK (about 40 ms on Linux) on every request.
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        tls = httpx.create_ssl_context()  # one for all pools: loading the CAs takes ~30 ms
        transport = _Sharded(
            [
                httpx.AsyncHTTPTransport(verify=tls, limits=per_shard, socket_options=nodelay)
                for _ in range(_SHARDS)
            ]
        )
        self.client = httpx.AsyncClient(timeout=timeout, transport=transport, trust_env=False)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        await anyio.to_thread.run_sync(self.drain)

    def drain(self) -> None:
        """Wait for every pending bookkeeping task, then close the stores and the record."""
        self._executor.shutdown(wait=True)
        if self._recorder is not None:
            self._recorder.close()
        for closable in (self._store, self._archive):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()

    def submit(self, task: Any) -> None:
        with self._lock:
            self.pending += 1

        def run() -> None:
            try:
                task()
            except Exception:  # bookkeeping never takes the proxy down
                _log.exception("ipse proxy: bookkeeping failed")
            finally:
                with self._lock:
                    self.pending -= 1

        self._executor.submit(run)

    # ------------------------------------------------------------------ bookkeeping

    def archive_put(self, session: str, removed: Sequence[Any], source: str) -> None:
        if (self.config.store or "").startswith("memory:"):
            return  # an in-memory store keeps no archive
        if self._archive is None:
            from ipse.archive import LazyArchive

            self._archive = LazyArchive(self.config.store)
        self._archive.put(session, removed, source)

    def _conversations(self) -> Any:
        if self._store is None:
            from ipse.store import open_conversations

            self._store = open_conversations(self.config.store)
        return self._store

    def book(self, ex: _Exchange) -> None:
        """Everything after a response: the store, the record, the log line."""
        if ex.dialect is not None and ex.parsed is None and ex.client_body:
            try:
                ex.parsed = jsonio.loads(ex.client_body)
            except (jsonio.JSONDecodeError, ValueError):
                ex.parsed = None
            if isinstance(ex.parsed, dict):
                lowered = {k.lower(): v for k, v in ex.headers}
                ex.key = conversation_key(lowered, ex.parsed, ex.dialect)
        rewrite = ex.rewrite
        state = None
        if ex.key is not None:
            try:
                state = self._conversations().record(
                    ex.key,
                    anchor=rewrite.anchor if rewrite is not None and rewrite.applied else None,
                    handoff=rewrite is not None and rewrite.applied,
                    removed_calls=rewrite.removed_calls if rewrite and rewrite.applied else 0,
                    removed_bytes=(len(ex.client_body) - len(ex.sent_body))
                    if rewrite and rewrite.applied and len(ex.client_body) > len(ex.sent_body)
                    else 0,
                )
            except Exception as exc:
                _log.warning("ipse proxy: the conversation store failed: %s", exc)
        body = b"".join(ex.chunks)
        usage = _usage(body)
        # The cache analysis is the costly part of bookkeeping (megabyte bodies are hashed
        # block by block): when requests come faster than it keeps up, it is skipped so the
        # queue, and the memory it holds, stays bounded. Store and record are never skipped.
        behind = self.pending > _ANALYSIS_BACKLOG
        analysis = {"skipped": "the proxy is busy"} if behind else self._analyze(ex, usage)
        extra = {
            "provider": ex.provider,
            "conversation": ex.key,
            "handoff": rewrite.to_json() if rewrite is not None else None,
            "error": ex.error,
            "client_disconnected": ex.disconnected,
            "analysis": analysis,
        }
        if self._recorder is not None:
            from ipse.transcript.formats.http_log import exchange_record

            client = ex.parsed if ex.parsed is not None else _json_or_text(ex.client_body)
            sent = client
            if ex.sent_body is not ex.client_body:
                sent = rewrite.body if rewrite is not None and rewrite.body else ex.sent_body
                sent = _json_or_text(sent) if isinstance(sent, bytes) else sent
            entry = exchange_record(
                method=ex.method,
                url=ex.path + (f"?{ex.query}" if ex.query else ""),
                headers=masked(ex.headers),
                body=sent,
                client_body=None if ex.sent_body is ex.client_body else client,
                status=ex.status,
                response_headers=masked(ex.response_headers),
                response_body=body,
                started=ex.started,
                first_byte=ex.first_byte,
                finished=ex.finished,
                extra=extra,
            )
            self._recorder.write(entry)
        if rewrite is not None and rewrite.applied:
            with contextlib.suppress(Exception):  # a count must not stop the log
                ex.tokens_saved = self._tokens_saved(ex)
        if self.config.log:
            line = log_line(ex, usage, analysis, state, json_log=self.config.json_log)
            stream = self._log_stream or sys.stderr
            with contextlib.suppress(Exception):
                stream.write(line + "\n")
                stream.flush()

    def _tokens_saved(self, ex: _Exchange) -> int | None:
        """The tokens the handoff took out of this request: the rewritten part of the client's
        history against what replaced it (counted once per prefix, with the library's counter;
        o200k_base, approximate for Claude)."""
        rewrite = ex.rewrite
        if rewrite is None or rewrite.body is None or not isinstance(ex.parsed, Mapping):
            return None
        name = "input" if ex.dialect == "openai-responses" else "messages"
        before, after = ex.parsed.get(name), rewrite.body.get(name)
        if not isinstance(before, list) or not isinstance(after, list):
            return None
        tail = 0
        while tail < min(len(before), len(after)):
            a, b = before[-1 - tail], after[-1 - tail]
            if a is not b and a != b:
                break
            tail += 1
        removed, kept = before[: len(before) - tail], after[: len(after) - tail]
        memo = (ex.key, rewrite.anchor, len(removed), len(kept), rewrite.removed_bytes)
        found = self._saved.get(memo)
        if found is None:
            from ipse.tokens import default_counter

            count = default_counter().count
            found = count(jsonio.dumps(removed).decode()) - count(jsonio.dumps(kept).decode())
            self._saved[memo] = found
            while len(self._saved) > _PREVIOUS_MAX:
                self._saved.popitem(last=False)
        return max(0, found)

    def _analyze(self, ex: _Exchange, usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """This request's cache use as the provider's cache model predicts it, given the
        conversation's previous request; the cause when reuse was lost."""
        if (
            not self.config.analyze
            or ex.key is None
            or not isinstance(ex.parsed, Mapping)
            or ex.dialect is None
            or ex.path.endswith("/count_tokens")
            or ex.status != 200
        ):
            return None
        from datetime import UTC, datetime

        from ipse.prefix import Request as PrefixRequest
        from ipse.prefix import actual_tokens, analyze

        body = ex.rewrite.body if ex.rewrite is not None and ex.rewrite.body else ex.parsed
        when = datetime.fromtimestamp(ex.started, tz=UTC)
        first = datetime.fromtimestamp(ex.first_byte or ex.finished, tz=UTC)
        provider = "anthropic" if ex.provider == "anthropic" else "openai"
        current = PrefixRequest(next(self._counter), body, provider, when, first, usage)
        previous, old_size = self._previous.pop(ex.key, (None, 0))
        self._previous[ex.key] = (current, len(ex.sent_body))
        self._previous_bytes += len(ex.sent_body) - old_size
        while len(self._previous) > 1 and (
            len(self._previous) > _PREVIOUS_MAX or self._previous_bytes > _PREVIOUS_BYTES
        ):
            _, (_, size) = self._previous.popitem(last=False)
            self._previous_bytes -= size
        requests = [previous, current] if previous is not None else [current]
        try:
            report = analyze(requests, provider, tokenizer="auto")
        except Exception as exc:  # an odd body must not stop the log
            return {"error": str(exc)}
        row = report.rows[-1]
        actual = actual_tokens(usage)
        return {
            "predicted": row.predicted.to_json(),
            "actual": actual.to_json() if actual is not None else None,
            "cause": row.cause.kind if row.cause else None,
            "detail": row.cause.detail if row.cause else None,
            "lost_tokens": row.lost_tokens,
            "cost_usd": round(row.cost_usd, 6),
            "cost_lost_usd": round(row.cost_lost_usd, 6),
        }


def _json_or_text(data: bytes) -> Any:
    try:
        return jsonio.loads(data)
    except (jsonio.JSONDecodeError, ValueError):
        return data.decode("utf-8", errors="replace")


def _usage(body: bytes) -> Mapping[str, Any] | None:
    from ipse.transcript.formats.http_log import usage_of

    try:
        return usage_of({"body": body.decode("utf-8", errors="replace")}, "response")
    except Exception:
        return None


class _Stream(StreamingResponse):
    """A streamed response that notices a client's disconnect under every ASGI version, and
    always runs ``finish`` (even when the body was never iterated)."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        finish: Callable[[], Awaitable[None]],
        *,
        status_code: int,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(content, status_code=status_code, headers=headers)
        self._finish = finish

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def stream() -> None:
                with contextlib.suppress(OSError):
                    await self.stream_response(send)
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            closer = getattr(self.body_iterator, "aclose", None)
            if closer is not None:
                await closer()
            await self._finish()


def create_app(config: ProxyConfig, *, log_stream: TextIO | None = None) -> Starlette:
    """The ASGI application of a proxy (state in ``app.state.proxy``)."""
    state = ProxyState(config, log_stream)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            await state.stop()

    async def health(request: Request) -> Response:
        document = {
            "ok": True,
            "service": SERVICE,
            "version": __version__,
            "pid": os.getpid(),
            "inflight": state.inflight,
            "requests": state.requests,
            "pending_bookkeeping": state.pending,
            "tasks": len(asyncio.all_tasks()),
            "upstreams": {"anthropic": str(config.anthropic), "openai": str(config.openai)},
            "handoff": config.handoff,
            "record": config.record is not None,
        }
        return Response(jsonio.dumps(document), media_type="application/json")

    async def handle(request: Request) -> Response:
        state.requests += 1
        state.inflight += 1
        try:
            return await _forward(state, request)
        except BaseException:
            state.inflight -= 1
            raise

    routes = [
        Route(HEALTH_PATH, health, methods=["GET"]),
        Route(
            "/{path:path}",
            handle,
            methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        ),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = state
    return app


async def _read_body(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def _names_checkpoint(body: bytes, names: Sequence[str]) -> bool:
    return any(name.encode() in body for name in names)


async def _forward(state: ProxyState, request: Request) -> Response:
    config = state.config
    started = time.time()
    path = request.url.path
    query = request.url.query
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    lowered = {k.lower(): v for k, v in headers}
    provider = provider_of(path, lowered)
    upstream = config.anthropic if provider == "anthropic" else config.openai
    dialect = dialect_of(path) if request.method == "POST" else None
    body = await _read_body(request, config.max_body)
    if body is None:
        state.inflight -= 1
        message = f"request body larger than the proxy's limit of {config.max_body} bytes"
        return _error(provider, 413, message)
    sent = body
    parsed: Any = None
    rewrite: Rewrite | None = None
    key: str | None = None
    # Only a body that names a checkpoint tool is read on the request's path; the others are
    # read (for the conversation key and the cache analysis) by the bookkeeping thread.
    if (
        dialect is not None
        and body
        and config.handoff
        and _names_checkpoint(body, config.tool_names)
    ):
        try:
            parsed = jsonio.loads(body)
        except (jsonio.JSONDecodeError, ValueError):
            parsed = None  # forwarded as it is: the provider answers in its own words
        if isinstance(parsed, dict):
            try:
                key = conversation_key(lowered, parsed, dialect)
                rewrite = await _rewrite(state, parsed, dialect, key, len(body))
            except Exception as exc:  # a body ipse cannot read is forwarded as it came
                _log.warning("ipse proxy: %s %s: not rewritten: %s", request.method, path, exc)
                key, rewrite = None, None
        if rewrite is not None and key is not None:
            if rewrite.applied:
                assert rewrite.body is not None
                sent = jsonio.dumps(rewrite.body)
                if rewrite.anchor is not None:
                    state.anchors[key] = rewrite.anchor
                    state.anchors.move_to_end(key)
                    while len(state.anchors) > 4096:
                        state.anchors.popitem(last=False)
            elif rewrite.invalid:
                _log.warning("ipse proxy: %s %s: %s", request.method, path, rewrite.reason)
    ex = _Exchange(
        method=request.method,
        path=path,
        query=query,
        provider=provider,
        dialect=dialect,
        key=key,
        headers=headers,
        client_body=body,
        sent_body=sent,
        parsed=parsed,
        rewrite=rewrite,
        status=None,
        response_headers=[],
        started=started,
    )
    client = state.client
    assert client is not None, "the proxy's lifespan has not started"
    outgoing = client.build_request(
        request.method,
        upstream.url(path, query),
        headers=request_headers(headers),
        content=sent,
    )
    try:
        upstream_response = await client.send(outgoing, stream=True)
    except httpx.TimeoutException as exc:
        return _failed(state, ex, 504, f"upstream {upstream} timed out: {type(exc).__name__}")
    except httpx.HTTPError as exc:
        return _failed(state, ex, 502, f"upstream {upstream} unreachable: {_reason(exc)}")
    ex.status = upstream_response.status_code
    ex.response_headers = [
        (k.decode("latin-1"), v.decode("latin-1")) for k, v in upstream_response.headers.raw
    ]
    keep_all = config.record is not None
    event_stream = "text/event-stream" in upstream_response.headers.get("content-type", "")

    done = False

    async def finish() -> None:
        """Close the upstream response and hand the exchange to the bookkeeping (once)."""
        nonlocal done
        if done:
            return
        done = True
        with anyio.CancelScope(shield=True):
            await upstream_response.aclose()
        ex.finished = time.time()
        state.inflight -= 1
        state.submit(partial(state.book, ex))

    async def relay() -> AsyncIterator[bytes]:
        kept = 0
        ends = _last_events(provider, dialect) if event_stream and ex.status == 200 else ()
        ended = not ends
        overlap = b""
        try:
            async for chunk in upstream_response.aiter_raw():
                if ex.first_byte is None:
                    ex.first_byte = time.time()
                if keep_all or kept < _USAGE_CAP:
                    ex.chunks.append(chunk)
                    kept += len(chunk)
                if not ended:
                    window = overlap + chunk
                    ended = any(end in window for end in ends)
                    overlap = window[-32:]
                yield chunk
            if not ended:
                ex.error = f"upstream {upstream} closed the stream before its last event"
                _log.warning("ipse proxy: %s", ex.error)
                yield error_event(provider, dialect, ex.error)
        except httpx.HTTPError as exc:
            ex.error = f"upstream {upstream} failed mid-response: {_reason(exc)}"
            _log.warning("ipse proxy: %s", ex.error)
            if event_stream:
                yield error_event(provider, dialect, ex.error)
        except BaseException:
            ex.disconnected = True
            raise
        finally:
            await finish()

    return _Stream(
        relay(),
        finish,
        status_code=upstream_response.status_code,
        headers=dict(_joined(response_headers(ex.response_headers))),
    )


_LAST_EVENTS: dict[str | None, tuple[bytes, ...]] = {
    "anthropic": (b"message_stop", b"event: error"),
    "openai-chat": (b"[DONE]",),
    "openai-responses": (
        b"response.completed",
        b"response.failed",
        b"response.incomplete",
        b"event: error",
        b"[DONE]",
    ),
}


def _last_events(provider: Provider, dialect: str | None) -> tuple[bytes, ...]:
    """The markers of an event stream's last event for its API (none known: empty)."""
    key = dialect if dialect is not None else ("anthropic" if provider == "anthropic" else None)
    return _LAST_EVENTS.get(key, ())


def _joined(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as a list for a dict: repeated names joined with a comma (set-cookie aside)."""
    out: dict[str, str] = {}
    for k, v in headers:
        out[k] = f"{out[k]}, {v}" if k in out and k.lower() != "set-cookie" else v
    return list(out.items())


async def _rewrite(
    state: ProxyState, parsed: dict[str, Any], dialect: str, key: str, size: int
) -> Rewrite:
    call = partial(
        rewrite_request,
        parsed,
        dialect,
        anchor=state.anchors.get(key),
        tool_names=state.config.tool_names,
        archive=state.archive_sink,
        session=key,
        source="proxy",
    )
    if size <= _INLINE_REWRITE or key in state.anchors:
        # small, or a conversation whose rewritten prefix is most likely cached: a few
        # milliseconds, less than a hop to a worker thread costs under load
        return call()
    return await anyio.to_thread.run_sync(call)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _error(provider: Provider, status: int, message: str) -> Response:
    return Response(error_body(provider, status, message), status, media_type="application/json")


def _failed(state: ProxyState, ex: _Exchange, status: int, message: str) -> Response:
    _log.warning("ipse proxy: %s %s: %s", ex.method, ex.path, message)
    ex.status = status
    ex.error = message
    body = error_body(ex.provider, status, message)
    ex.chunks = [body]
    ex.response_headers = [("content-type", "application/json")]
    ex.finished = time.time()
    state.inflight -= 1
    state.submit(partial(state.book, ex))
    return Response(body, status, media_type="application/json")


__all__ = ["HEALTH_PATH", "SERVICE", "ProxyState", "create_app"]
