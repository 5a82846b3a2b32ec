"""The MCP server: the tools of `ipse.mcp._tools` on the official SDK's low-level ``Server``.

The low-level server is used (not ``MCPServer``'s decorators) because the schemas already exist
as JSON (the checkpoint's `SCHEMA`, the twin's `TOOL_SPECS`) and must reach the model unchanged.
Every call is checked against its schema, run in a worker thread (the library is synchronous),
and every failure becomes a tool error with one redacted line: the server itself never fails a
call, so an agent's bad arguments never cost it the connection.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse.errors import IpseError, MissingExtra
from ipse.mcp._tools import Settings, Tool, for_call, tools
from ipse.redact import redact

if TYPE_CHECKING:
    from mcp.server import Server

INSTRUCTIONS = (
    "ipse keeps you yourself across context resets. Narrate: before a tool call say in a "
    "sentence what you expect; after it, what it showed. When a unit of work is done, call "
    "micro_handoff with facts-first notes: your tool calls and their results before it are "
    "then removed from the conversation, your words and the notes stay. `recall` gives a "
    "removed result back by the id its breadcrumb shows. The state_* tools keep the "
    "project's goal, invariants and next step; the twin_* tools a twin's identity state."
)

log = logging.getLogger("ipse.mcp")


def _sdk() -> Any:
    try:
        import mcp_types
        from mcp.server import Server
    except ImportError as exc:
        raise MissingExtra("mcp", "mcp") from exc
    return Server, mcp_types


def one_line(exc: BaseException) -> str:
    """The message a tool error carries: one line, credentials masked."""
    if isinstance(exc, IpseError):
        text = str(exc)
    else:
        text = f"internal error ({type(exc).__name__}): {exc}"
    return redact(" ".join(text.split()))


def call(table: dict[str, Tool], settings: Settings, name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool synchronously (checked arguments); raises `IpseError` on bad input."""
    from ipse.arguments import check_arguments
    from ipse.errors import UsageError

    tool = table.get(name)
    if tool is None:
        raise UsageError(f"unknown tool {name!r} (this server has {', '.join(table)})")
    args = dict(arguments or {})
    check_arguments(args, tool.schema, "")
    return tool.run(settings, args)


def build_server(settings: Settings | None = None) -> Server[Any]:
    """The MCP server for ``settings`` (not yet running)."""
    from ipse import __version__

    server_class, types = _sdk()
    chosen = settings or Settings()
    table = {tool.name: tool for tool in tools()}
    listing = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.schema))
        for t in table.values()
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: Any) -> Any:
        import anyio

        def work() -> dict[str, Any]:
            settings = for_call(chosen, getattr(params, "meta", None))
            return call(table, settings, params.name, params.arguments)

        try:
            result = await anyio.to_thread.run_sync(work)
        except Exception as exc:  # every failure is the caller's tool error, never ours
            if not isinstance(exc, IpseError):
                log.exception("tool %s failed", params.name)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=one_line(exc))], is_error=True
            )
        text = str(result.get("text", "")) or jsonio.dumps(result).decode()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=jsonio.loads(jsonio.dumps(result)),
        )

    server: Server[Any] = server_class(
        "ipse",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def serve_stdio(settings: Settings) -> None:
    """Serve over stdin/stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(settings)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(settings: Settings, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp``."""
    import uvicorn

    server = build_server(settings)
    app = server.streamable_http_app(host=host)
    print(f"ipse mcp: serving http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = ["INSTRUCTIONS", "build_server", "call", "one_line", "serve_http", "serve_stdio"]
