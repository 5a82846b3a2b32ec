"""``ipse mcp``: the checkpoint, recall, state and twin tools for any agent, over MCP.

A thin front end: the tool table (`Tool`, `tools`) maps each tool to one library call; over
stdio (`serve_stdio`) the server is ipse's own (`ipse.mcp._stdio`, standard library only, so it
answers a harness at once), over streamable HTTP (`serve_http`, `build_server`) it runs on the
official ``mcp`` SDK, imported only then (`MissingExtra` names ``ipse[mcp]`` without it).
Names are imported on first use: the stdio server's start imports none of them (``_server``
imports the SDK, which takes most of a second).
"""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.mcp._server import build_server, call
    from ipse.mcp._tools import Settings, tools

_MODULES = {
    "_server": ("build_server", "call"),
    "_tools": ("Settings", "tools"),
}

__getattr__, __dir__ = _lazy.exports("ipse.mcp", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
