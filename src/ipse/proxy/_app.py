"""The proxy application: its routes, and what lives as long as it does.

One Starlette route takes every path and hands each request to `ipse.proxy._forward.forward`
(answered here, or handed off, sent upstream and relayed); ``GET /ipse/health`` proves to
``ipse proxy start | stop`` that this is the user's own proxy (`ipse.proxy._owner`).

`ProxyState` holds each long-lived part, one job each: the upstream client
(`ipse.proxy._upstream`), the request counters (`ipse.proxy._exchange`), each conversation's
checkpoint anchor, the store writes a request waits for (`ipse.proxy._store`) and the
bookkeeping thread for the record and the log (`ipse.proxy._bookkeeping`). Closing the app
drains the bookkeeping and the store writes, so no record is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, TextIO

from ipse import __version__, jsonio
from ipse.errors import MissingExtra
from ipse.proxy._config import ProxyConfig
from ipse.proxy._owner import prove, secret

try:
    import anyio
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("proxy", exc.name or "starlette") from exc

from ipse.proxy._bookkeeping import Bookkeeping
from ipse.proxy._exchange import RequestCounters
from ipse.proxy._forward import forward
from ipse.proxy._health import HEALTH_PATH
from ipse.proxy._store import ProxyStore, Recent
from ipse.proxy._upstream import upstream_client

SERVICE = "ipse-proxy"
_ANCHORS_MAX = 4096  # conversations whose checkpoint anchor is kept in memory


class ProxyState:
    """What lives as long as the app (see the module docstring)."""

    def __init__(self, config: ProxyConfig, log_stream: TextIO | None = None) -> None:
        self.config = config
        self.client: httpx.AsyncClient | None = None
        self.counters = RequestCounters()
        self.anchors = Recent(_ANCHORS_MAX)  # conversation key -> its checkpoint call's id
        self.store = ProxyStore(config.store)
        self.bookkeeping = Bookkeeping(config, log_stream)
        self.secret = secret()  # what the health endpoint proves it knows (`ipse.proxy._owner`)
        # the process that answers for the proxy: the one that built the app, which is the
        # supervisor of the workers forked from it (`ipse.proxy._workers`)
        self.pid = os.getpid()

    @property
    def inflight(self) -> int:
        return self.counters.inflight

    @property
    def requests(self) -> int:
        return self.counters.requests

    @property
    def pending(self) -> int:
        """Bookkeeping tasks not yet done."""
        return self.bookkeeping.pending

    async def start(self) -> None:
        self.client = upstream_client(self.config)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        await anyio.to_thread.run_sync(self.drain)

    def drain(self) -> None:
        """Wait for every pending bookkeeping task, then close the stores and the record."""
        self.bookkeeping.close()
        self.store.close()

    def health(self, request: Request) -> dict[str, Any]:
        """The health document: what this proxy is, what it counts, and (given a ``nonce``)
        the proof that it is this user's own."""
        config = self.config
        document: dict[str, Any] = {
            "ok": True,
            "service": SERVICE,
            "version": __version__,
            "pid": self.pid,
            "worker": os.getpid(),  # the process that answered: counters below are its own
            "workers": config.workers,
            "inflight": self.inflight,
            "requests": self.requests,
            "pending_bookkeeping": self.pending,
            "tasks": len(asyncio.all_tasks()),
            "upstreams": config.upstreams(),
            "settings": config.digest(),
            "handoff": config.handoff,
            "autopilot": config.autopilot_settings(),
            "record": config.record is not None,
            "record_file": config.record_digest(),
        }
        nonce = request.query_params.get("nonce")
        if nonce is not None:
            server = request.scope.get("server") or (None, 0)
            document["proof"] = prove(self.secret, nonce, int(server[1] or 0), self.pid)
        return document


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
        return Response(jsonio.dumps(state.health(request)), media_type="application/json")

    async def handle(request: Request) -> Response:
        opened = state.counters.open()
        try:
            return await forward(state, request, opened)
        finally:
            if not opened.ended_by_stream:
                opened.end()  # answered whole: a streamed response ends it when its stream ends

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


__all__ = ["HEALTH_PATH", "SERVICE", "ProxyState", "create_app"]
