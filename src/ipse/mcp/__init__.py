"""``ipse mcp``: the checkpoint, recall, state and twin tools for any agent, over MCP (extra).

A thin front end: the tool table (`Tool`, `tools`) maps each tool to one library call, and the
server (`build_server`, `serve_stdio`, `serve_http`) runs them on the official ``mcp`` SDK, which
is imported only when a server is built (`MissingExtra` names ``ipse[mcp]`` without it).
"""

from __future__ import annotations

from ipse.mcp._server import INSTRUCTIONS, build_server, call, one_line, serve_http, serve_stdio
from ipse.mcp._tools import RECALL_CHARS, Settings, Tool, default_session, tools

__all__ = [
    "INSTRUCTIONS",
    "RECALL_CHARS",
    "Settings",
    "Tool",
    "build_server",
    "call",
    "default_session",
    "one_line",
    "serve_http",
    "serve_stdio",
    "tools",
]
