"""``ipse mcp``: the checkpoint, recall, state and twin tools for any agent, over MCP.

A thin front end: the tool table (`Tool`, `tools`) maps each tool to one library call; over
stdio (`serve_stdio`) the server is ipse's own (`ipse.mcp._stdio`, standard library only, so it
answers a harness at once), over streamable HTTP (`serve_http`, `build_server`) it runs on the
official ``mcp`` SDK, imported only then (`MissingExtra` names ``ipse[mcp]`` without it).
Names are imported on first use: the stdio server's start imports none of them.
"""

from __future__ import annotations

import typing as _typing

if _typing.TYPE_CHECKING:
    from ipse.mcp._server import (
        INSTRUCTIONS,
        build_server,
        call,
        one_line,
        require_sdk,
        serve_http,
        serve_stdio,
    )
    from ipse.mcp._tools import RECALL_CHARS, Settings, Tool, default_session, tools

_WHERE = {
    "INSTRUCTIONS": "ipse.mcp._server",
    "build_server": "ipse.mcp._server",
    "call": "ipse.mcp._server",
    "one_line": "ipse.mcp._server",
    "require_sdk": "ipse.mcp._server",
    "serve_http": "ipse.mcp._server",
    "serve_stdio": "ipse.mcp._server",
    "RECALL_CHARS": "ipse.mcp._tools",
    "Settings": "ipse.mcp._tools",
    "Tool": "ipse.mcp._tools",
    "default_session": "ipse.mcp._tools",
    "tools": "ipse.mcp._tools",
}


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ipse.mcp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "INSTRUCTIONS",
    "RECALL_CHARS",
    "Settings",
    "Tool",
    "build_server",
    "call",
    "default_session",
    "one_line",
    "require_sdk",
    "serve_http",
    "serve_stdio",
    "tools",
]
