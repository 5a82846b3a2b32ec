"""The MCP server over HTTP: the tools of `ipse.mcp._tools` on the official SDK's low-level
``Server``; and what both transports share (`call`, `tool_result`, `one_line`).

The low-level server is used (not ``MCPServer``'s decorators) because the schemas already exist
as JSON (the checkpoint's `SCHEMA`, the twin's `TOOL_SPECS`) and must reach the model unchanged.
Every call is checked against its schema and run in a worker thread, its failure turned into
its one redacted line there too (the library is synchronous, and a message quoting a long
argument must not hold the event loop): the server itself never fails a call, so an agent's
bad arguments never cost it the connection, and no call waits for another. Over stdio the
server is `ipse.mcp._stdio`, which answers the same without importing the SDK.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse._redact import redact
from ipse.errors import IpseError, MissingExtra
from ipse.mcp._stdio import instructions
from ipse.mcp._tools import TWIN_PREFIX, Settings, Tool, for_call, offered

if TYPE_CHECKING:
    from mcp.server import Server

INSTRUCTIONS = instructions(twin=True)

log = logging.getLogger("ipse.mcp")


def require_sdk() -> Any:
    try:
        import mcp_types
        from mcp.server import Server
    except ImportError as exc:
        raise MissingExtra("mcp", "mcp") from exc
    return Server, mcp_types


ERROR_CHARS = 2000  # the most a tool error echoes back (a message may quote an argument)


def one_line(exc: BaseException) -> str:
    """The message a tool error carries: one line of at most `ERROR_CHARS` characters,
    credentials masked (before it is cut, so no cut can split a password from its mask)."""
    if isinstance(exc, IpseError):
        text = str(exc)
    else:
        text = f"internal error ({type(exc).__name__}): {exc}"
    text = redact(" ".join(text.split()))
    if len(text) > ERROR_CHARS:
        cut = len(text) - ERROR_CHARS
        text = f"{text[:ERROR_CHARS]}… [{cut} more characters]"
    return text


def call(table: dict[str, Tool], settings: Settings, name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool synchronously (checked arguments); raises `IpseError` on bad input."""
    from ipse._arguments import check_arguments
    from ipse.errors import UsageError

    tool = table.get(name)
    if tool is None:
        shown = name if len(name) <= 100 else name[:100] + "…"
        hint = (
            "; the twin_* tools need a twin: start the server with `ipse mcp --twin ID`"
            if name.startswith(TWIN_PREFIX)
            else ""
        )
        raise UsageError(f"unknown tool {shown!r} (this server has {', '.join(table)}{hint})")
    if arguments is not None and not isinstance(arguments, dict):
        raise UsageError(f"arguments: expected an object, got {type(arguments).__name__}")
    args = dict(arguments or {})
    check_arguments(args, tool.schema, "")
    return tool.run(settings, args)


def tool_result(
    table: dict[str, Tool], settings: Settings, name: str, arguments: Any
) -> dict[str, Any]:
    """One tool call as the ``result`` of its ``tools/call`` answer (wire names): the tool's
    text and structured result, or a tool error with its one line. Never raises: call it in a
    worker thread, where the message of a failure is built too."""
    try:
        result = call(table, settings, name, arguments)
    except Exception as exc:  # every failure is the caller's tool error, never ours
        line = one_line(exc)
        if not isinstance(exc, IpseError):  # (the line, not the traceback: no credential)
            log.error("tool %s failed: %s", name if len(name) <= 100 else name[:100], line)
        return {"content": [{"type": "text", "text": line}], "isError": True}
    text = str(result.get("text", "")) or jsonio.dumps(result).decode()
    return {
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "structuredContent": jsonio.loads(jsonio.dumps(result)),
    }


def table_for(settings: Settings) -> dict[str, Tool]:
    """The tools a server with ``settings`` offers, by name."""
    return {tool.name: tool for tool in offered(settings)}


def build_server(settings: Settings | None = None) -> Server[Any]:
    """The MCP server for ``settings`` (not yet running)."""
    from ipse import __version__

    server_class, types = require_sdk()
    chosen = settings or Settings()
    table = table_for(chosen)
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
            return tool_result(table, settings, params.name, params.arguments)

        # the call and the message of its failure (redaction reads the whole message) both
        # run in a worker thread: the event loop only hands over and answers
        result = await anyio.to_thread.run_sync(work)
        [content] = result["content"]
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=content["text"])],
            structured_content=result.get("structuredContent"),
            is_error=result["isError"],
        )

    server: Server[Any] = server_class(
        "ipse",
        version=__version__,
        instructions=instructions(bool(chosen.twin)),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def serve_stdio(settings: Settings) -> None:
    """Serve over stdin/stdout until the client closes them (`ipse.mcp._stdio`, no SDK)."""
    from ipse.mcp._stdio import serve

    serve(settings)


def serve_http(settings: Settings, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp``."""
    import uvicorn

    from ipse.mcp._stdio import MAX_MESSAGE_BYTES

    server = build_server(settings)
    # one limit on both transports (the SDK's own default is 4 MiB); a longer body gets a 413
    app = server.streamable_http_app(host=host, max_request_body_size=MAX_MESSAGE_BYTES)
    print(f"ipse mcp: serving http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = [
    "ERROR_CHARS",
    "INSTRUCTIONS",
    "build_server",
    "call",
    "one_line",
    "serve_http",
    "serve_stdio",
    "table_for",
    "tool_result",
]
