"""``ipse proxy``: micro-handoff and cache analysis on the wire, for any client with a base URL.

A local HTTP proxy for the Anthropic Messages and OpenAI Chat Completions / Responses APIs
(extra ``ipse[proxy]``: Starlette, uvicorn, httpx). Requests that hold a call of the checkpoint
tool are handed off with the library (`ipse.handoff.wire.rewrite_request`) before they go upstream;
everything else passes byte for byte; responses stream back as they arrive. See `create_app`
(the ASGI app), `serve` (foreground) and `start_in_thread`, each configured by a `ProxyConfig`
and its `Upstream` per provider; what ``ipse proxy start | stop`` and the agent install use
besides (is one answering? is it this user's own?) is in ``ipse.proxy._shared``.
The HTTP stack is imported only when an app is created.
"""

from __future__ import annotations

import typing as _typing

from ipse.proxy._config import ProxyConfig, Upstream
from ipse.proxy._serve import serve, start_in_thread

if _typing.TYPE_CHECKING:
    from typing import Any, TextIO


def create_app(config: ProxyConfig, *, log_stream: TextIO | None = None) -> Any:
    """The proxy's ASGI application (Starlette); `MissingExtra` without ``ipse[proxy]``."""
    from ipse.proxy._app import create_app as _create_app

    return _create_app(config, log_stream=log_stream)


__all__ = ["ProxyConfig", "Upstream", "create_app", "serve", "start_in_thread"]
