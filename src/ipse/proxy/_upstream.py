"""The one HTTP client every request goes upstream through, and the connection pools under it.

httpcore's pool checks every pooled connection (a poll() each) whenever a request is assigned
or released: the cost grows with the pool, and 50 concurrent streams spent most of the proxy's
time there (cProfile, bench/proxy.py). Requests spread over `POOLS` smaller pools instead
(`PooledTransport`, round robin). Headers and body leave in two writes, so every connection sets
TCP_NODELAY: without it the body waits for the upstream's delayed ACK (about 40 ms on Linux) on
every request.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Sequence

import httpx  # (the proxy extra: `ipse.proxy._app`, imported first, names it when missing)

from ipse.proxy._config import ProxyConfig

POOLS = 16
MAX_CONNECTIONS = 1000  # over all pools
MAX_KEEPALIVE = 100  # over all pools
WRITE_TIMEOUT = 60.0


class PooledTransport(httpx.AsyncBaseTransport):
    """Round robin over several connection pools (see the module docstring)."""

    def __init__(self, transports: Sequence[httpx.AsyncHTTPTransport]) -> None:
        self._transports = list(transports)
        self._next = itertools.cycle(self._transports)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await next(self._next).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self._transports:
            await transport.aclose()


def upstream_client(config: ProxyConfig) -> httpx.AsyncClient:
    """The client for ``config``'s upstreams: its timeouts, `POOLS` pools, no proxy from the
    environment (the upstream is the one configured)."""
    timeout = httpx.Timeout(
        connect=config.connect_timeout,
        read=config.read_timeout,
        write=WRITE_TIMEOUT,
        pool=config.connect_timeout,
    )
    per_pool = httpx.Limits(
        max_connections=MAX_CONNECTIONS // POOLS, max_keepalive_connections=MAX_KEEPALIVE // POOLS
    )
    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    tls = httpx.create_ssl_context()  # one for all pools: loading the CAs takes ~30 ms
    transport = PooledTransport(
        [
            httpx.AsyncHTTPTransport(verify=tls, limits=per_pool, socket_options=nodelay)
            for _ in range(POOLS)
        ]
    )
    return httpx.AsyncClient(timeout=timeout, transport=transport, trust_env=False)


__all__ = ["POOLS", "PooledTransport", "upstream_client"]
