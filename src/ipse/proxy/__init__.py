"""``ipse proxy``: micro-handoff and cache analysis on the wire, for any client with a base URL.

A local HTTP proxy for the Anthropic Messages and OpenAI Chat Completions / Responses APIs
(extra ``ipse[proxy]``: Starlette, uvicorn, httpx). Requests that hold a call of the checkpoint
tool are handed off with the library (`ipse.handoff.wire.rewrite_request`) before they go upstream;
everything else passes byte for byte; responses stream back as they arrive. See `create_app`
(the ASGI app), `serve` (foreground), `start_in_thread`, `health_document` (does one answer?) and
`identify` (is the one that answers this user's own?).
The HTTP stack is imported only when an app is created.
"""

from __future__ import annotations

import typing as _typing

from ipse.proxy._config import (
    ANTHROPIC_UPSTREAM,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_WORKERS,
    OPENAI_UPSTREAM,
    READ_TIMEOUT,
    ProxyConfig,
    Upstream,
    is_loopback,
)
from ipse.proxy._owner import Listener, foreign_listeners, identify, proxy_process
from ipse.proxy._serve import (
    RunningProxy,
    bind,
    health_document,
    serve,
    start_in_thread,
    warn_if_exposed,
)

if _typing.TYPE_CHECKING:
    from typing import Any, TextIO


def create_app(config: ProxyConfig, *, log_stream: TextIO | None = None) -> Any:
    """The proxy's ASGI application (Starlette); `MissingExtra` without ``ipse[proxy]``."""
    from ipse.proxy._app import create_app as _create_app

    return _create_app(config, log_stream=log_stream)


__all__ = [
    "ANTHROPIC_UPSTREAM",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_WORKERS",
    "OPENAI_UPSTREAM",
    "READ_TIMEOUT",
    "Listener",
    "ProxyConfig",
    "RunningProxy",
    "Upstream",
    "bind",
    "create_app",
    "foreign_listeners",
    "health_document",
    "identify",
    "is_loopback",
    "proxy_process",
    "serve",
    "start_in_thread",
    "warn_if_exposed",
]
