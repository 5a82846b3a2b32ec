"""The proxy application: routes, the rewrite hook, streaming pass-through, bookkeeping.

One Starlette route takes every path. A ``POST`` to a route whose body ipse understands
(Anthropic ``/v1/messages`` and ``/v1/messages/count_tokens``, OpenAI ``.../chat/completions``
and ``.../responses``) is handed to `ipse.handoff.wire.rewrite_request` when its bytes name a
checkpoint tool; every other request, and every body the handoff leaves alone, goes upstream
byte for byte. The response streams back as it arrives (``aiter_raw``: nothing is buffered or
decoded), through one shared `httpx.AsyncClient`.

Some requests never leave: ``HEAD /`` (Claude Code's check at every start) is answered here, and
a request for a provider without an upstream, a path that climbs out of the upstream's prefix
(`ipse.proxy._wire.confine`) or a body over the limit is refused in the provider's error shape.
Each request is one `Flight`, landed once however it ends; ``GET /ipse/health`` proves to
``ipse proxy start | stop`` that this is the user's own proxy (`ipse.proxy._owner`).

A client that disconnects cancels the upstream request: the response listens for the disconnect
whatever ASGI version the server speaks, and closes the upstream stream, shielded from the
cancellation. Upstream failures before the response began become the provider's error document
with a fitting status (502 unreachable, 504 timed out); after it began, a server-sent ``error``
event.

What a replica acknowledges is stored first, so that any replica behind a load balancer can
take the conversation's next request: what a handoff removed is in the archive before the
rewritten request leaves, and the request is counted in the conversation store (anchor,
counters) while it is upstream, before its answer's last event goes back (`ProxyState.ahead`).

What is not on the request's path runs on one bookkeeping thread, in completion order: the
record file (credentials masked in headers, query and fields, and wherever a value the request
carried turns up again), and the log lines (a stream's start, every end, every refusal), with
the prefix cache model's prediction. Closing the app drains that thread, so no record is lost.
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
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from ipse import __version__, _notes, jsonio
from ipse.errors import MissingExtra
from ipse.handoff.wire import Rewrite, clear_cache, conversation_key, rewrite_request
from ipse.proxy._config import ProxyConfig, Upstream
from ipse.proxy._exchange import Exchange, Flight, InFlight
from ipse.proxy._owner import prove, secret
from ipse.proxy._record import Recorder, answer_line, log_line, saved, start_line
from ipse.proxy._wire import (
    CREDENTIALS,
    Provider,
    confine,
    dialect_of,
    error_body,
    error_event,
    masked,
    provider_of,
    request_headers,
    response_headers,
)
from ipse.redact import is_credential_name, redact, redact_query

if TYPE_CHECKING:
    from ipse.prefix import LiveAnalysis

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
_ANCHORS_MAX = 4096  # conversations whose checkpoint anchor is kept in memory
_SAVINGS_MAX = 128  # handoffs whose measured saving is kept (one count per checkpoint)
STORE_WAIT = 5.0  # seconds a request waits, at most, for the store (archive, count)
# fields of a request body that are the conversation itself, kept whole in a record
_CONTENT_FIELDS = frozenset({"messages", "input", "system", "tools", "instructions", "prompt"})
_NOT_CREDENTIALS = frozenset({"prompt_cache_key"})  # names that look like a credential's


class _Recent(OrderedDict[Hashable, Any]):
    """A mapping that keeps its ``limit`` most recently set keys."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Hashable, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class _Collected:
    """One request's archive sink: what its handoff removed, kept until the proxy writes it to
    the archive (`ProxyState.archive_all`), before the rewritten request leaves."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, tuple[Any, ...], str]] = []

    def put(self, session: str, removed: Sequence[Any], source: str) -> int:
        items = tuple(removed)
        self.puts.append((session, items, source))
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
        self.counters = InFlight()
        self.anchors = _Recent(_ANCHORS_MAX)  # conversation key -> its checkpoint call's id
        self.secret = secret()  # what the health endpoint proves it knows (`ipse.proxy._owner`)
        # the process that answers for the proxy: the one that built the app, which is the
        # supervisor of the workers forked from it (`ipse.proxy._workers`)
        self.pid = os.getpid()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipse-proxy-books")
        # the writes a response waits for: the conversation counters (`count_ahead`), and the
        # archive (`ahead`) on a thread of its own, since a SQLite connection may only be used
        # by the thread that opened it
        self._ahead = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ipse-proxy-store")
        self._archiver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipse-proxy-archive")
        self._store: Any = None
        self._archive: Any = None
        self._recorder = Recorder(config.record) if config.record is not None else None
        self._live: LiveAnalysis | None = None  # each conversation's previous request
        self._savings = _Recent(_SAVINGS_MAX)  # tokens saved, per checkpoint of a conversation
        self._log_stream = log_stream
        self._lock = threading.Lock()
        self._archive_lock = threading.Lock()
        self.pending = 0

    @property
    def inflight(self) -> int:
        return self.counters.inflight

    @property
    def requests(self) -> int:
        return self.counters.requests

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
        self._ahead.shutdown(wait=True)
        self._archiver.shutdown(wait=True)
        if self._recorder is not None:
            self._recorder.close()
        for closable in (self._store, self._archive):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()

    async def ahead(self, task: Callable[[], Any]) -> Any:
        """Run an archive write off the event loop, on the archive's own thread (its one
        connection serialises the transactions; a SQLite one is bound to that thread)."""
        return await asyncio.wrap_future(self._archiver.submit(task))

    def count_ahead(self, ex: Exchange) -> Future[int | None] | None:
        """Start counting the request in its conversation (`_count`) while it goes upstream; the
        answer's end waits for it (`_relay`): a replica killed after answering has already
        stored what it answered."""
        if ex.dialect is None:
            return None
        return self._ahead.submit(self._count_logged, ex)

    def _count_logged(self, ex: Exchange) -> int | None:
        try:
            _read(ex, keep=False)
            return self._count(ex, ex.rewrite is not None and ex.rewrite.applied)
        except Exception:  # bookkeeping never takes the proxy down
            _log.exception("ipse proxy: counting the request failed")
            return None

    def submit(self, task: Callable[[], None]) -> None:
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

    def land(self, flight: Flight, ex: Exchange) -> None:
        """The end of an exchange with an upstream: out of flight, then booked (in order)."""
        flight.land()
        self.submit(partial(self.book, ex))

    def say(self, line: Callable[[], str]) -> None:
        """Write a log line, in order with the bookkeeping's (``line`` is built there)."""
        if self.config.log:
            self.submit(lambda: self._write_line(line()))

    def _write_line(self, line: str) -> None:
        stream = self._log_stream or sys.stderr
        with contextlib.suppress(Exception):
            stream.write(line + "\n")
            stream.flush()

    def answer(
        self, request: Request, provider: Provider | None, status: int, note: str
    ) -> Response:
        """A request the proxy answers itself, with its log line: a refusal in the provider's
        error shape (``provider`` given), or an empty local answer."""
        method, path, json_log = request.method, request.url.path, self.config.json_log
        self.say(lambda: answer_line(method, path, status, note, json_log=json_log))
        if provider is None:
            return Response(b"", status)
        return Response(error_body(provider, status, note), status, media_type="application/json")

    # ------------------------------------------------------------------ bookkeeping

    def archive_all(self, puts: Sequence[tuple[str, Sequence[Any], str]]) -> None:
        """Write what a handoff removed to the archive (idempotent: content addressed, an item
        already there is kept as it is, so replicas and retries may write it again)."""
        if (self.config.store or "").startswith("memory:"):
            return  # an in-memory store keeps no archive
        with self._archive_lock:  # one connection: its transactions one at a time
            if self._archive is None:
                from ipse.archive import LazyArchive

                self._archive = LazyArchive(self.config.store)
            for session, removed, source in puts:
                self._archive.put(session, removed, source)

    def _conversations(self) -> Any:
        if self._store is None:
            from ipse.store import open_conversations

            self._store = open_conversations(self.config.store)
        return self._store

    def book(self, ex: Exchange) -> None:
        """Everything after a response: the record and the log line (the conversation store
        was written while the request went upstream, `count_ahead`)."""
        requests = ex.counted.result() if ex.counted is not None else None
        _read(ex)
        applied = ex.rewrite is not None and ex.rewrite.applied
        if applied:
            with contextlib.suppress(Exception):  # a count must not stop the record or the log
                ex.saved_tokens = self._saved_tokens(ex)
        body = b"".join(ex.chunks)
        usage = _usage(body)
        # The cache analysis is the costly part of bookkeeping (megabyte bodies are hashed
        # block by block): when requests come faster than it keeps up, it is skipped so the
        # queue, and the memory it holds, stays bounded. Store and record are never skipped.
        behind = self.pending > _ANALYSIS_BACKLOG
        analysis = {"skipped": "the proxy is busy"} if behind else self._analyze(ex, usage)
        secrets = _secrets(ex)
        if self._recorder is not None:
            self._recorder.write(self._entry(ex, body, analysis), secrets=secrets)
        if self.config.log:
            line = log_line(ex, usage, analysis, requests, json_log=self.config.json_log)
            self._write_line(_without(line, secrets))

    def _count(self, ex: Exchange, applied: bool) -> int | None:
        """Count the request in its conversation's state; the conversation's requests so far."""
        if ex.key is None:
            return None
        rewrite = ex.rewrite
        try:
            state = self._conversations().record(
                ex.key,
                anchor=rewrite.anchor if rewrite is not None and applied else None,
                handoff=applied,
                removed_calls=rewrite.removed_calls if rewrite is not None and applied else 0,
                removed_bytes=ex.saved_bytes,
            )
        except Exception as exc:
            _log.warning("ipse proxy: the conversation store failed: %s", redact(str(exc)))
            return None
        return int(state.requests)

    def _entry(self, ex: Exchange, body: bytes, analysis: Any) -> dict[str, Any]:
        """The record's line for an exchange, its credentials masked (headers, query, fields)."""
        from ipse.transcript.formats.http_log import exchange_record

        rewrite = ex.rewrite
        client = ex.parsed if ex.parsed is not None else _json_or_text(ex.client_body)
        sent = client
        if ex.sent_body is not ex.client_body:
            sent = rewrite.body if rewrite is not None and rewrite.body else ex.sent_body
            sent = _json_or_text(sent) if isinstance(sent, bytes) else sent
        handoff = None
        if rewrite is not None:
            handoff = rewrite.to_json()
            del handoff["removed_bytes"]  # the archived items' JSON; the saving is ``saved``
            handoff["saved"] = saved(ex) if rewrite.applied else None
        extra = {
            "provider": ex.provider,
            "conversation": ex.key,
            "handoff": handoff,
            "error": ex.error,
            "client_disconnected": ex.disconnected,
            "analysis": analysis,
        }
        return exchange_record(
            method=ex.method,
            url=ex.path + (f"?{redact_query(ex.query)}" if ex.query else ""),
            headers=masked(ex.headers),
            body=_scrubbed(sent),
            client_body=None if ex.sent_body is ex.client_body else _scrubbed(client),
            status=ex.status,
            response_headers=masked(ex.response_headers),
            response_body=body,
            started=ex.started,
            first_byte=ex.first_byte,
            finished=ex.finished,
            extra=extra,
        )

    def _saved_tokens(self, ex: Exchange) -> int | None:
        """The tokens the handoff took out of this request (`ipse.handoff.tokens_saved`, on the
        client's and the rewritten body), counted once per checkpoint of a conversation: every
        later request of it carries the same rewritten prefix, so the same saving."""
        rewrite = ex.rewrite
        if rewrite is None or rewrite.body is None or not isinstance(ex.parsed, Mapping):
            return None
        if ex.dialect is None:
            return None
        memo = (ex.key, rewrite.anchor, rewrite.removed_calls, rewrite.removed_thinking,
                rewrite.kept_thinking_removed)  # fmt: skip
        found = self._savings.get(memo) if ex.key is not None else None
        if found is None:
            from ipse.handoff import tokens_saved
            from ipse.transcript import codec

            read = codec(ex.dialect).read_body
            found = tokens_saved(read(ex.parsed), read(rewrite.body))
            if ex.key is not None:
                self._savings.put(memo, found)
        return int(found)

    def _analyze(self, ex: Exchange, usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
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
        if self._live is None:  # (the cache model's modules on the first request it analyses)
            from ipse.prefix import LiveAnalysis

            self._live = LiveAnalysis()
        body = ex.rewrite.body if ex.rewrite is not None and ex.rewrite.body else ex.parsed
        return self._live.analyze(
            ex.key,
            body,
            "anthropic" if ex.provider == "anthropic" else "openai",
            size=len(ex.sent_body),
            started=ex.started,
            first_byte=ex.first_byte or ex.finished,
            usage=usage,
        )


def _counted(ex: Exchange) -> Exchange:
    """``ex`` once its count in the store is done (its body read and its conversation keyed)."""
    if ex.counted is not None:
        ex.counted.result()
    return ex


def _read(ex: Exchange, *, keep: bool = True) -> None:
    """Key the request's conversation and name its model, parsing the client's body when the
    handoff did not (off the request's path). ``keep``: hold the parsed body for the record and
    the analysis; without it (while the request is in flight) the parse is dropped at once, so
    a thousand big requests in flight do not each hold their body twice."""
    if ex.dialect is None or not ex.client_body:
        return
    parsed = ex.parsed
    if parsed is None:
        if not keep and ex.key is not None:
            return
        try:
            parsed = jsonio.loads(ex.client_body)
        except (jsonio.JSONDecodeError, ValueError):
            parsed = None
        if keep:
            ex.parsed = parsed
    if isinstance(parsed, dict):
        if ex.key is None:
            lowered = {k.lower(): v for k, v in ex.headers}
            ex.key = conversation_key(lowered, parsed, ex.dialect)
        model = parsed.get("model")
        ex.model_hint = model if isinstance(model, str) else None


def _json_or_text(data: bytes) -> Any:
    try:
        return jsonio.loads(data)
    except (jsonio.JSONDecodeError, ValueError):
        return data.decode("utf-8", errors="replace")


_SHORTEST_SECRET = 8  # shorter values are not searched for (they would mask ordinary words)


def _secrets(ex: Exchange) -> list[str]:
    """The credentials a request carried (credential query parameters and headers): masked
    wherever else they turn up in what is written, such as an upstream's error that quotes its
    URL. Longest first."""
    from urllib.parse import unquote_plus

    found: set[str] = set()
    for pair in ex.query.split("&") if ex.query else ():
        name, equals, value = pair.partition("=")
        if equals and is_credential_name(unquote_plus(name)):
            found.update((value, unquote_plus(value)))
    for name, value in ex.headers:
        lowered = name.lower()
        if lowered in CREDENTIALS or is_credential_name(lowered):
            found.update((value, value.rpartition(" ")[2]))
    return sorted((v for v in found if len(v) >= _SHORTEST_SECRET), key=len, reverse=True)


def _without(line: str, secrets: Sequence[str]) -> str:
    for secret_value in secrets:
        line = line.replace(secret_value, "***")
    return line


def _scrubbed(body: Any) -> Any:
    """A request body for the record: the value of every field named like a credential masked
    (``api_key``, ``metadata.token``, ...), the conversation itself (messages, input, system,
    tools) kept whole."""
    if not isinstance(body, dict):
        return body
    return {
        key: value if key in _CONTENT_FIELDS else _masked_fields(key, value)
        for key, value in body.items()
    }


def _masked_fields(name: str, value: Any) -> Any:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        credential = is_credential_name(name) and name not in _NOT_CREDENTIALS
        return "***" if credential else value
    if isinstance(value, dict):
        return {k: _masked_fields(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_fields(name, v) for v in value]
    return value


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
        document: dict[str, Any] = {
            "ok": True,
            "service": SERVICE,
            "version": __version__,
            "pid": state.pid,
            "worker": os.getpid(),  # the process that answered: counters below are its own
            "workers": config.workers,
            "inflight": state.inflight,
            "requests": state.requests,
            "pending_bookkeeping": state.pending,
            "tasks": len(asyncio.all_tasks()),
            "upstreams": config.upstreams(),
            "settings": config.digest(),
            "handoff": config.handoff,
            "record": config.record is not None,
        }
        nonce = request.query_params.get("nonce")
        if nonce is not None:
            server = request.scope.get("server") or (None, 0)
            document["proof"] = prove(state.secret, nonce, int(server[1] or 0), state.pid)
        return Response(jsonio.dumps(document), media_type="application/json")

    async def handle(request: Request) -> Response:
        flight = state.counters.take_off()
        try:
            return await _forward(state, request, flight)
        finally:
            if not isinstance(flight.handed_to, _Stream):
                flight.land()  # answered whole: a streamed response lands when its stream ends

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


async def _forward(state: ProxyState, request: Request, flight: Flight) -> Response:
    """One request: answered here (refused, or ``HEAD /``), or sent upstream and relayed."""
    config = state.config
    started = time.time()
    path = request.url.path
    if request.method in ("HEAD", "GET") and path == "/":
        # Claude Code's connectivity check at every start: answered here, no upstream contacted
        return state.answer(request, None, 200, "answered by the proxy")
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    lowered = {k.lower(): v for k, v in headers}
    provider = provider_of(path, lowered)
    upstream = config.upstream(provider)
    if upstream is None:
        flag = f"--{provider}-upstream"
        note = f"refused: this ipse proxy has no {provider} upstream (start it with {flag})"
        return state.answer(request, provider, 404, note)
    raw_path = request.scope.get("raw_path") or path.encode("utf-8")
    target = confine(raw_path.decode("latin-1"))
    if target is None:
        note = f"refused: the path leaves the upstream's prefix {upstream.prefix or '/'}"
        return state.answer(request, provider, 400, note)
    body = await _read_body(request, config.max_body)
    if body is None:
        note = f"refused: request body larger than the proxy's limit of {config.max_body} bytes"
        return state.answer(request, provider, 413, note)
    dialect = dialect_of(path) if request.method == "POST" else None
    ex = Exchange(
        method=request.method,
        path=path,
        query=request.url.query,
        provider=provider,
        dialect=dialect,
        key=None,
        headers=headers,
        client_body=body,
        sent_body=body,
        parsed=None,
        rewrite=None,
        started=started,
    )
    await _handoff(state, ex, lowered)
    return await _send(state, ex, upstream, target, flight)


async def _handoff(state: ProxyState, ex: Exchange, lowered: Mapping[str, str]) -> None:
    """Rewrite the body at its checkpoint when it names one (``ex.sent_body`` then changes).

    Only a body that names a checkpoint tool is read on the request's path; the others are read
    (for the conversation key and the cache analysis) by the bookkeeping thread."""
    config, body, dialect = state.config, ex.client_body, ex.dialect
    if not (dialect and body and config.handoff and _names_checkpoint(body, config.tool_names)):
        return
    try:
        parsed = jsonio.loads(body)
    except (jsonio.JSONDecodeError, ValueError):
        return  # forwarded as it is: the provider answers in its own words
    if not isinstance(parsed, dict):
        return
    ex.parsed = parsed
    sink = _Collected()
    try:
        key = ex.key = conversation_key(lowered, parsed, dialect)
        rewrite = await _rewrite(state, parsed, dialect, key, len(body), sink)
    except Exception as exc:  # a body ipse cannot read is forwarded as it came
        ex.handoff_error = f"not rewritten: {exc}"
        return
    if rewrite.applied and sink.puts:
        # Nothing leaves the request before the archive holds it: a replica killed after
        # sending has lost nothing, and one whose archive fails sends the client's own bytes.
        try:
            await asyncio.wait_for(state.ahead(partial(state.archive_all, sink.puts)), STORE_WAIT)
        except Exception as exc:
            clear_cache()  # the next request rewrites, and archives, from scratch
            why = redact(str(exc)) or type(exc).__name__
            ex.handoff_error = f"not rewritten: the archive failed: {why}"
            _log.warning("ipse proxy: %s", ex.handoff_error)
            return
    ex.rewrite = rewrite
    if rewrite.applied:
        assert rewrite.body is not None
        ex.sent_body = jsonio.dumps(rewrite.body)
        if rewrite.anchor is not None:
            state.anchors.put(key, rewrite.anchor)


async def _send(
    state: ProxyState, ex: Exchange, upstream: Upstream, target: str, flight: Flight
) -> Response:
    """Send the exchange upstream; its response streams back (`_relay`), or a failure to get
    one becomes the provider's error document."""
    client = state.client
    assert client is not None, "the proxy's lifespan has not started"
    outgoing = client.build_request(
        ex.method,
        upstream.url(target, ex.query),
        headers=request_headers(ex.headers),
        content=ex.sent_body,
    )
    ex.counted = state.count_ahead(ex)
    try:
        upstream_response = await client.send(outgoing, stream=True)
    except httpx.TimeoutException as exc:
        message = f"upstream {upstream} timed out: {type(exc).__name__}"
        return _failed(state, ex, flight, 504, message)
    except httpx.HTTPError as exc:
        return _failed(state, ex, flight, 502, f"upstream {upstream} unreachable: {_reason(exc)}")
    ex.status = upstream_response.status_code
    ex.response_headers = [
        (k.decode("latin-1"), v.decode("latin-1")) for k, v in upstream_response.headers.raw
    ]
    ex.streaming = "text/event-stream" in upstream_response.headers.get("content-type", "")
    if ex.streaming:
        json_log, at = state.config.json_log, time.time()
        state.say(lambda: start_line(_counted(ex), at, json_log=json_log))
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
        state.land(flight, ex)

    response = _Stream(
        _relay(state, ex, upstream, upstream_response, finish),
        finish,
        status_code=upstream_response.status_code,
        headers=dict(_joined(response_headers(ex.response_headers))),
    )
    flight.handed_to = response
    return response


async def _relay(
    state: ProxyState,
    ex: Exchange,
    upstream: Upstream,
    upstream_response: httpx.Response,
    finish: Callable[[], Awaitable[None]],
) -> AsyncIterator[bytes]:
    """The upstream's bytes as they arrive, kept for the bookkeeping; an event stream that
    breaks off ends with the provider's ``error`` event.

    The answer is acknowledged only once its request is counted in the store (`count_ahead`,
    started when the request went upstream): an event stream's last event, and the first byte
    of any other answer, wait for that count. By a stream's end it is long done, so streaming
    never waits for the database."""
    keep_all = state.config.record is not None
    kept = 0
    ends = _last_events(ex.provider, ex.dialect) if ex.streaming and ex.status == 200 else ()
    ended = not ends
    overlap = b""
    gate = ex.counted
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
            if ended and gate is not None:
                await _acknowledged(ex)
                gate = None
            yield chunk
        if gate is not None:
            await _acknowledged(ex)
            gate = None
        if not ended:
            ex.error = f"upstream {upstream} closed the stream before its last event"
            yield error_event(ex.provider, ex.dialect, ex.error)
    except httpx.HTTPError as exc:
        ex.error = f"upstream {upstream} failed mid-response: {_reason(exc)}"
        if ex.streaming:
            if gate is not None:
                await _acknowledged(ex)
            yield error_event(ex.provider, ex.dialect, ex.error)
    except BaseException:
        ex.disconnected = True
        raise
    finally:
        await finish()


async def _acknowledged(ex: Exchange) -> None:
    """Wait for the request's count in the store (`ProxyState.count_ahead`), at most
    `STORE_WAIT` seconds: a database that hangs delays answers by that much, never stops them."""
    if ex.counted is None or ex.counted.done():
        return
    waiter = asyncio.wrap_future(ex.counted)
    done, _ = await asyncio.wait({waiter}, timeout=STORE_WAIT)
    if not done:
        _log.warning("ipse proxy: the conversation store is slow; answering before the count")


def _last_events(provider: Provider, dialect: str | None) -> tuple[bytes, ...]:
    """The markers of an event stream's last event for its API (none known: empty): its
    dialect's, Anthropic's for an Anthropic route of no dialect."""
    from ipse.transcript import codec

    if dialect is None:
        return codec(provider).stream_end if provider == "anthropic" else ()
    return codec(dialect).stream_end


def _joined(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as a list for a dict: repeated names joined with a comma (set-cookie aside)."""
    out: dict[str, str] = {}
    for k, v in headers:
        out[k] = f"{out[k]}, {v}" if k in out and k.lower() != "set-cookie" else v
    return list(out.items())


async def _rewrite(
    state: ProxyState,
    parsed: dict[str, Any],
    dialect: str,
    key: str,
    size: int,
    sink: _Collected,
) -> Rewrite:
    # ``state.anchors`` only makes the lookup of the rewrite cache cheaper: the newest checkpoint
    # in the body decides the cut, so every replica rewrites a body to the same bytes
    call = partial(
        rewrite_request,
        parsed,
        dialect,
        anchor=state.anchors.get(key),
        tool_names=state.config.tool_names,
        archive=sink,
        session=key,
        source="proxy",
        budget=state.config.handoff_budget,
    )
    if size <= _INLINE_REWRITE or key in state.anchors:
        # small, or a conversation whose rewritten prefix is most likely cached: a few
        # milliseconds, less than a hop to a worker thread costs under load
        return call()
    return await anyio.to_thread.run_sync(call)


def _reason(exc: BaseException) -> str:
    text = redact(str(exc).strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failed(state: ProxyState, ex: Exchange, flight: Flight, status: int, message: str) -> Response:
    """The provider's error document for an upstream that gave no response (booked once)."""
    ex.status = status
    ex.error = message
    body = error_body(ex.provider, status, message)
    ex.chunks = [body]
    ex.response_headers = [("content-type", "application/json")]
    ex.finished = time.time()
    state.land(flight, ex)
    return Response(body, status, media_type="application/json")


__all__ = ["HEALTH_PATH", "SERVICE", "ProxyState", "create_app"]
