"""One request's path through the proxy: answered here, or handed off and sent upstream, its
response relayed back as it arrives.

Some requests never leave: ``HEAD /`` (Claude Code's check at every start) is answered here, and
a request for a provider without an upstream, a path that climbs out of the upstream's prefix
(`ipse.proxy._wire.confine`) or a body over the limit is refused in the provider's error shape
(`answer_here`). A ``POST`` to a route whose body ipse understands is handed to
`ipse.handoff.wire.rewrite_request` when its bytes name a checkpoint tool (`hand_off`); then
the autopilot judges it (`ipse.proxy._autopilot`: a nudge to checkpoint, or a cut of its own);
every other request, and every body both leave alone, goes upstream byte for byte. The
response streams back as it arrives (``aiter_raw``: nothing is buffered or decoded).

A client that disconnects cancels the upstream request: the response listens for the disconnect
whatever ASGI version the server speaks (`StreamedResponse`), and closes the upstream stream,
shielded from the cancellation. Upstream failures before the response began become the
provider's error document with a fitting status (502 unreachable, 504 timed out); after it
began, a server-sent ``error`` event. Each request is one `OpenRequest`, ended once however it
ends, and handed to the bookkeeping once (`end_exchange`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ipse import _notes, jsonio
from ipse._redact import mask_text, redact
from ipse.handoff._shared import clear_cache, conversation_key
from ipse.handoff.wire import Rewrite, rewrite_request
from ipse.proxy._autopilot import apply_autopilot
from ipse.proxy._config import Upstream
from ipse.proxy._exchange import Exchange, OpenRequest
from ipse.proxy._record import answer_line, start_line
from ipse.proxy._store import RemovedItems
from ipse.proxy._wire import (
    Provider,
    confine,
    dialect_of,
    error_body,
    error_event,
    provider_of,
    request_headers,
    response_headers,
)

if TYPE_CHECKING:
    from ipse.proxy._app import ProxyState

_log = _notes.logger("ipse.proxy")
USAGE_CAP = 8 * 1024 * 1024  # bytes of a response kept to read usage (all when recording)
INLINE_REWRITE = 256 * 1024  # smaller bodies are rewritten on the event loop


class StreamedResponse(StreamingResponse):
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


def answer_here(
    state: ProxyState, request: Request, provider: Provider | None, status: int, note: str
) -> Response:
    """A request the proxy answers itself, with its log line: a refusal in the provider's
    error shape (``provider`` given), or an empty local answer."""
    method, path, json_log = request.method, request.url.path, state.config.json_log
    state.bookkeeping.say(lambda: answer_line(method, path, status, note, json_log=json_log))
    if provider is None:
        return Response(b"", status)
    return Response(error_body(provider, status, note), status, media_type="application/json")


def end_exchange(state: ProxyState, opened: OpenRequest, ex: Exchange) -> None:
    """The end of an exchange with an upstream: no longer open, then recorded (in order)."""
    opened.end()
    state.bookkeeping.finished(ex)


async def forward(state: ProxyState, request: Request, opened: OpenRequest) -> Response:
    """One request: answered here (refused, or ``HEAD /``), or sent upstream and relayed."""
    config = state.config
    started = time.time()
    path = request.url.path
    if request.method in ("HEAD", "GET") and path == "/":
        # Claude Code's connectivity check at every start: answered here, no upstream contacted
        return answer_here(state, request, None, 200, "answered by the proxy")
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    lowered = {k.lower(): v for k, v in headers}
    provider = provider_of(path, lowered)
    upstream = config.upstream(provider)
    if upstream is None:
        flag = f"--{provider}-upstream"
        note = f"refused: this ipse proxy has no {provider} upstream (start it with {flag})"
        return answer_here(state, request, provider, 404, note)
    raw_path = request.scope.get("raw_path") or path.encode("utf-8")
    target = confine(raw_path.decode("latin-1"))
    if target is None:
        note = f"refused: the path leaves the upstream's prefix {upstream.prefix or '/'}"
        return answer_here(state, request, provider, 400, note)
    body = await _read_body(request, config.max_body)
    if body is None:
        note = f"refused: request body larger than the proxy's limit of {config.max_body} bytes"
        return answer_here(state, request, provider, 413, note)
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
    await hand_off(state, ex, lowered)
    await apply_autopilot(state, ex, lowered)
    return await _send(state, request, ex, (upstream, target), opened)


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


async def hand_off(state: ProxyState, ex: Exchange, lowered: Mapping[str, str]) -> None:
    """Rewrite the body at its checkpoint when it names one (``ex.sent_body`` then changes).

    Only a body that names a checkpoint tool is read on the request's path; the others are read
    (for the conversation key and the cache analysis) off it."""
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
    sink = RemovedItems()
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
            await state.store.archive_removed(sink.puts)
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


async def _rewrite(
    state: ProxyState,
    parsed: dict[str, Any],
    dialect: str,
    key: str,
    size: int,
    sink: RemovedItems,
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
    if size <= INLINE_REWRITE or key in state.anchors:
        # small, or a conversation whose rewritten prefix is most likely cached: a few
        # milliseconds, less than a hop to a worker thread costs under load
        return call()
    return await anyio.to_thread.run_sync(call)


async def _send(
    state: ProxyState,
    request: Request,
    ex: Exchange,
    where: tuple[Upstream, str],
    opened: OpenRequest,
) -> Response:
    """Send the exchange upstream (``where``: the upstream and the path there); its response
    streams back (`_relay`), or a failure to get one becomes the provider's error document. A
    client that leaves while the upstream has not answered yet cancels the upstream request."""
    client = state.client
    assert client is not None, "the proxy's lifespan has not started"
    upstream, target = where
    outgoing = client.build_request(
        ex.method,
        upstream.url(target, ex.query),
        headers=request_headers(ex.headers),
        content=ex.sent_body,
    )
    ex.counted = state.store.start_count(ex)
    try:
        upstream_response = await _unless_the_client_leaves(
            request.receive, client.send(outgoing, stream=True)
        )
    except httpx.TimeoutException as exc:
        message = f"upstream {upstream} timed out: {type(exc).__name__}"
        return _failed(state, ex, opened, 504, message)
    except httpx.HTTPError as exc:
        return _failed(state, ex, opened, 502, f"upstream {upstream} unreachable: {_reason(exc)}")
    if upstream_response is None:
        return _left(state, ex, opened)
    ex.status = upstream_response.status_code
    ex.response_headers = [
        (k.decode("latin-1"), v.decode("latin-1")) for k, v in upstream_response.headers.raw
    ]
    ex.streaming = "text/event-stream" in upstream_response.headers.get("content-type", "")
    if ex.streaming:
        json_log, at = state.config.json_log, time.time()
        state.bookkeeping.say(lambda: start_line(ex.after_count(), at, json_log=json_log))
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
        end_exchange(state, opened, ex)

    response = StreamedResponse(
        _relay(state, ex, upstream, upstream_response, finish),
        finish,
        status_code=upstream_response.status_code,
        headers=dict(_joined(response_headers(ex.response_headers))),
    )
    opened.ended_by_stream = True
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

    The answer is acknowledged only once its request is counted in the store
    (`ProxyStore.start_count`, started when the request went upstream): an event stream's last
    event, and the first byte of any other answer, wait for that count. By a stream's end it is
    long done, so streaming never waits for the database."""
    keep_all = state.config.record is not None
    kept = 0
    ends = last_events(ex.provider, ex.dialect) if ex.streaming and ex.status == 200 else ()
    ended = not ends
    overlap = b""
    gate = ex.counted
    try:
        async for chunk in upstream_response.aiter_raw():
            if ex.first_byte is None:
                ex.first_byte = time.time()
            if keep_all or kept < USAGE_CAP:
                ex.chunks.append(chunk)
                kept += len(chunk)
            if not ended:
                window = overlap + chunk
                ended = any(end in window for end in ends)
                overlap = window[-32:]
            if ended and gate is not None:
                await state.store.wait_for_count(ex)
                gate = None
            yield chunk
        if gate is not None:
            await state.store.wait_for_count(ex)
            gate = None
        if not ended:
            ex.error = f"upstream {upstream} closed the stream before its last event"
            yield error_event(ex.provider, ex.dialect, ex.error)
    except httpx.HTTPError as exc:
        ex.error = f"upstream {upstream} failed mid-response: {_reason(exc)}"
        if ex.streaming:
            if gate is not None:
                await state.store.wait_for_count(ex)
            yield error_event(ex.provider, ex.dialect, ex.error)
    except BaseException:
        ex.disconnected = True
        raise
    finally:
        await finish()


async def _unless_the_client_leaves(
    receive: Receive, sending: Awaitable[httpx.Response]
) -> httpx.Response | None:
    """The upstream's response, or None when the client disconnected before it came: the
    request upstream is then cancelled (its connection closed). The request's body has been
    read whole, so the next message the server has for it is its disconnect."""
    answer = asyncio.ensure_future(sending)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (answer, gone):
            if not task.done():
                task.cancel()
        with contextlib.suppress(BaseException):
            await gone
    if not gone.done() or gone.cancelled():
        return answer.result()
    with contextlib.suppress(BaseException):  # the cancellation closes the upstream connection
        response = await answer
        await response.aclose()  # (an answer that came in the same moment: nobody reads it)
    return None


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _left(state: ProxyState, ex: Exchange, opened: OpenRequest) -> Response:
    """The end of an exchange whose client left before the upstream answered (recorded once)."""
    ex.disconnected = True
    ex.error = "the client disconnected before the upstream answered; the request was cancelled"
    ex.finished = time.time()
    end_exchange(state, opened, ex)
    return Response(b"", 499)  # (nobody reads it: the client has gone)


def last_events(provider: Provider, dialect: str | None) -> tuple[bytes, ...]:
    """The markers of an event stream's last event for its API (none known: empty): its
    dialect's, Anthropic's for an Anthropic route of no dialect."""
    from ipse.transcript._shared import codec

    if dialect is None:
        return codec(provider).stream_end if provider == "anthropic" else ()
    return codec(dialect).stream_end


def _joined(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as a list for a dict: repeated names joined with a comma (set-cookie aside)."""
    out: dict[str, str] = {}
    for k, v in headers:
        out[k] = f"{out[k]}, {v}" if k in out and k.lower() != "set-cookie" else v
    return list(out.items())


def _reason(exc: BaseException) -> str:
    text = mask_text(str(exc).strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failed(
    state: ProxyState, ex: Exchange, opened: OpenRequest, status: int, message: str
) -> Response:
    """The provider's error document for an upstream that gave no response (recorded once)."""
    ex.status = status
    ex.error = message
    body = error_body(ex.provider, status, message)
    ex.chunks = [body]
    ex.response_headers = [("content-type", "application/json")]
    ex.finished = time.time()
    end_exchange(state, opened, ex)
    return Response(body, status, media_type="application/json")


__all__ = ["StreamedResponse", "answer_here", "end_exchange", "forward", "hand_off", "last_events"]
