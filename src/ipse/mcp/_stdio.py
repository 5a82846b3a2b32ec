"""``ipse mcp`` over stdio without the SDK: JSON-RPC lines in, answers out, tools in threads.

A harness (Claude Code, Codex) starts the server and sends its first request to the model as
soon as it has the tool list, or without it when the server is slow. Importing the MCP SDK
takes most of a second, so this module serves stdio from the standard library alone:
``initialize`` and ``tools/list`` are answered from the definitions in ``tools.json`` (the same
bytes every time), and the tools' own code is imported in the background meanwhile. Streamable
HTTP (``--http``) stays on the SDK (`ipse.mcp._server`); both answer the same.

The protocol is MCP's stdio transport: one JSON-RPC 2.0 message per line, UTF-8. Both eras the
SDK serves are served: the ``initialize`` handshake (protocol versions 2024-11-05 to
2025-11-25) and the per-request envelope of 2026-07-28 (``server/discover``, ``_meta`` in
every request); the first ``initialize`` or envelope fixes a connection's era, as the SDK does.

Every request gets an answer: a message that cannot be read (not UTF-8, not JSON, a batch, a
lone surrogate where it cannot stand) gets a JSON-RPC error, with the request's id when it can
be found; a line longer than `MAX_MESSAGE_BYTES` is read no further than that (memory stays
bounded), skipped, and answered with an error. Tool calls run in worker threads, so a slow call
never holds a cheap one; answers are written whole, one per line, in the order they finish.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ThreadPoolExecutor
    from typing import Any, BinaryIO, Protocol

    from ipse.mcp._tools import Settings, Tool

    class Output(Protocol):
        """Where answers go (stdout's binary stream)."""

        def write(self, data: bytes, /) -> int: ...
        def flush(self) -> None: ...


MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # the longest message (one line) the server reads
WORKERS = 16  # tool calls that run at once; more wait their turn, reading goes on

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
UNSUPPORTED_PROTOCOL_VERSION = -32022

INSTRUCTIONS = (
    "ipse keeps you yourself across context resets. Narrate: before a tool call say in a "
    "sentence what you expect; after it, what it showed. When a unit of work is done, call "
    "micro_handoff with facts-first notes: your tool calls and their results before it are "
    "then removed from the conversation, your words and the notes stay. `recall` gives a "
    "removed result back by the id its breadcrumb shows. The state_* tools keep the "
    "project's goal, invariants and next step"
)
TWIN_INSTRUCTIONS = "; the twin_* tools a twin's identity state."


def instructions(twin: bool) -> str:
    """What the server tells the model about its tools (the twin's only when it has them)."""
    return INSTRUCTIONS + (TWIN_INSTRUCTIONS if twin else ".")


# A request's id where its line cannot be read whole: right after the opening brace (and
# "jsonrpc"), or right before the closing one, as clients write it (numbers and plain strings).
_ID = rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
_HEAD_ID = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)
_TAIL_ID = re.compile(_ID + rb"\s*\}\s*\Z")


def _encode(message: dict[str, Any]) -> bytes:
    """One line of JSON; a lone surrogate (an echoed id or argument) as its ASCII escape."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


class Front:
    """One stdio connection: reads requests, answers them, runs tool calls in threads."""

    def __init__(
        self, settings: Settings | Callable[[], Settings], out: Output, *, twin: bool = False
    ) -> None:
        """``settings``, or what makes them when first needed (then ``twin`` says whether
        they name a twin): the server answers before it has imported the tools' code."""
        from ipse import __version__

        self._settings = settings
        self._settings_lock = threading.Lock()
        self.out = out
        self.twin = twin if callable(settings) else bool(settings.twin)
        self.server_info = {"name": "ipse", "version": __version__}
        self.era: str | None = None  # "handshake" or "modern", fixed by the first of them
        self._write_lock = threading.Lock()
        self._table: dict[str, Tool] | None = None
        self._table_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._tools: bytes | None = None
        self.closed = False

    @property
    def settings(self) -> Settings:
        with self._settings_lock:
            if callable(self._settings):
                self._settings = self._settings()
            return self._settings

    # ------------------------------------------------------------------------------- output

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(_encode(message))

    def send_bytes(self, data: bytes) -> None:
        with self._write_lock:
            if self.closed:
                return
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True  # the client went away: nobody to answer

    # -------------------------------------------------------------------------------- tools

    def tools_array(self) -> bytes:
        """The ``tools`` array, the same bytes for every ``tools/list`` of this server."""
        if self._tools is None:
            from ipse.mcp._listing import wire_tools

            self._tools = wire_tools(self.twin)
        return self._tools

    def table(self) -> dict[str, Tool]:
        with self._table_lock:
            if self._table is None:
                from ipse.mcp._server import table_for

                self._table = table_for(self.settings)
            return self._table

    def warm(self) -> None:
        """Import the tools' code in the background (the first call then starts at once)."""
        threading.Thread(target=self._warm, name="ipse-mcp-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            self.table()  # (makes the settings first)
            import ipse.handoff  # noqa: F401  (what micro_handoff needs first)
        except Exception:  # pragma: no cover (the call itself reports it)
            pass

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="ipse-mcp-call")
        return self._pool

    def wait(self) -> None:
        """Let the calls under way finish and answer (the client closed its side)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # ------------------------------------------------------------------------------- input

    def too_long(self, head: bytes, tail: bytes) -> None:
        """Answer a line over `MAX_MESSAGE_BYTES` (read no further than that)."""
        found = _HEAD_ID.match(head) or _TAIL_ID.search(tail)
        rid = json.loads(found.group(1)) if found else None
        self.send(
            _error(
                rid,
                INVALID_REQUEST,
                f"message over {MAX_MESSAGE_BYTES} bytes: ipse mcp reads at most "
                f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MiB a message",
            )
        )

    def handle(self, line: bytes) -> None:
        """One line from the client."""
        if not line.strip():
            return
        message = self._read(line)
        if message is None:
            return
        method = message.get("method")
        has_id = "id" in message
        rid = message.get("id")
        if method is None and ("result" in message or "error" in message):
            return  # an answer to a request of ours: this server sends none
        if has_id and type(rid) not in (int, str):
            what = "Invalid Request: the id must be a string or an integer"
            self.send(_error(None, INVALID_REQUEST, what))
            return
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if has_id:
                self.send(_error(rid, INVALID_REQUEST, "Invalid Request"))
            return
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            if has_id:
                self.send(_error(rid, INVALID_PARAMS, "Invalid request parameters", ""))
            return
        if not has_id:
            return  # a notification (initialized, cancelled, ...): nothing to answer
        self.request(rid, method, params or {})

    def _read(self, line: bytes) -> dict[str, Any] | None:
        """The JSON object a line holds; None, once its error is answered, for anything else."""
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            found = _HEAD_ID.match(line[:4096]) or _TAIL_ID.search(line[-4096:])
            rid = json.loads(found.group(1)) if found else None
            reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "not valid JSON"
            self.send(_error(rid, PARSE_ERROR, f"Parse error: the message is {reason}"))
            return None
        if isinstance(message, list):
            self.send(_error(None, INVALID_REQUEST, "Invalid Request: batches are not served"))
            return None
        if not isinstance(message, dict):
            self.send(_error(None, INVALID_REQUEST, "Invalid Request: not an object"))
            return None
        return message

    def request(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        modern = self._era_of(rid, method, params.get("_meta"))
        if modern is None:
            return  # refused, and answered so
        if method == "initialize" and not modern:
            self.initialize(rid, params)
        elif method == "server/discover" and modern:
            self.era = "modern"
            self.answer(rid, self._discovery(), modern)
        elif method == "ping" and not modern:
            self.answer(rid, {}, modern)
        elif method == "tools/list":
            self.era = self.era or ("modern" if modern else None)
            self.list_tools(rid, modern)
        elif method == "tools/call":
            self.era = self.era or ("modern" if modern else None)
            self.call_tool(rid, params, modern)
        else:
            self.send(_error(rid, METHOD_NOT_FOUND, "Method not found", method))

    def _era_of(self, rid: Any, method: str, meta: Any) -> bool | None:
        """Whether the request carries the modern envelope; None when it is refused (answered
        here): a modern request that does not fit, or a bare one on a modern connection."""
        modern = isinstance(meta, dict) and VERSION_KEY in meta
        if modern and isinstance(meta, dict):
            refused = self._modern_refusal(rid, method, meta)
            if refused is not None:
                self.send(refused)
                return None
        elif self.era == "modern" and method != "initialize":
            self.send(
                _error(
                    rid,
                    INVALID_PARAMS,
                    f"params._meta must be an object carrying the required '{VERSION_KEY}' "
                    f"and '{CAPABILITIES_KEY}' envelope keys",
                )
            )
            return None
        return modern

    def _discovery(self) -> dict[str, Any]:
        return {
            "cacheScope": "private",
            "capabilities": {"tools": {"listChanged": False}},
            "instructions": instructions(self.twin),
            "resultType": "complete",
            "supportedVersions": list(MODERN_VERSIONS),
            "ttlMs": 0,
        }

    def call_tool(self, rid: Any, params: dict[str, Any], modern: bool) -> None:
        """Hand a ``tools/call`` to a worker thread (`call`), its parameters checked first."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict | None):
            self.send(_error(rid, INVALID_PARAMS, "Invalid request parameters", ""))
            return
        self.pool().submit(self.call, rid, name, arguments, modern, params.get("_meta"))

    def _modern_refusal(self, rid: Any, method: str, meta: dict[str, Any]) -> Any:
        if self.era == "handshake":
            return _error(
                rid,
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; requests carrying the "
                f"{MODERN_VERSIONS[-1]} envelope are not accepted on it",
            )
        if CAPABILITIES_KEY not in meta:
            return _error(
                rid,
                INVALID_PARAMS,
                f"params._meta is missing the required envelope key(s): {CAPABILITIES_KEY}",
            )
        version = meta[VERSION_KEY]
        if version not in MODERN_VERSIONS:
            data = {"supported": list(MODERN_VERSIONS), "requested": version}
            return _error(rid, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
        if method == "initialize":
            data = {"supported": list(MODERN_VERSIONS), "requested": version}
            return _error(
                rid,
                UNSUPPORTED_PROTOCOL_VERSION,
                f"connection is serving the {MODERN_VERSIONS[-1]} protocol; the initialize "
                "handshake is not accepted",
                data,
            )
        return None

    def initialize(self, rid: Any, params: dict[str, Any]) -> None:
        if self.era == "modern":
            requested = params.get("protocolVersion")
            self.send(
                _error(
                    rid,
                    UNSUPPORTED_PROTOCOL_VERSION,
                    f"connection is serving the {MODERN_VERSIONS[-1]} protocol; the "
                    "initialize handshake is not accepted",
                    {"supported": list(MODERN_VERSIONS), "requested": requested},
                )
            )
            return
        self.era = "handshake"
        requested = params.get("protocolVersion")
        version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        result = {
            "capabilities": {"tools": {"listChanged": False}},
            "instructions": instructions(self.twin),
            "protocolVersion": version,
            "serverInfo": self.server_info,
        }
        self.answer(rid, result, False)
        self.warm()

    def list_tools(self, rid: Any, modern: bool) -> None:
        tools = self.tools_array()
        if not modern:
            head = _encode({"jsonrpc": "2.0", "id": rid, "result": {"tools": []}})
            # the precomputed array goes in whole: the same bytes in every answer
            self.send_bytes(head.replace(b'"tools":[]', b'"tools":' + tools, 1))
            return
        result = {"cacheScope": "private", "resultType": "complete", "tools": [], "ttlMs": 0}
        head = _encode(self._answer(rid, result, modern))
        self.send_bytes(head.replace(b'"tools":[]', b'"tools":' + tools, 1))

    def call(
        self, rid: Any, name: str, arguments: dict[str, Any] | None, modern: bool, meta: Any
    ) -> None:
        """One tool call (in a worker thread): its answer, whatever happens. Its session is
        read at the call (`ipse.mcp._tools.for_call`), not once at start."""
        try:
            from ipse.mcp._server import tool_result
            from ipse.mcp._tools import for_call

            settings = for_call(self.settings, meta)
            result = tool_result(self.table(), settings, name, arguments)
            if modern:
                result["resultType"] = "complete"
            self.answer(rid, result, modern)
        except BaseException as exc:  # pragma: no cover (tool_result itself never raises)
            self.send(_error(rid, -32603, f"Internal error ({type(exc).__name__})"))

    def _answer(self, rid: Any, result: dict[str, Any], modern: bool) -> dict[str, Any]:
        if modern:
            result = {**result, "_meta": {SERVER_INFO_KEY: self.server_info}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def answer(self, rid: Any, result: dict[str, Any], modern: bool) -> None:
        self.send(self._answer(rid, result, modern))


def read_lines(source: BinaryIO, front: Front) -> None:
    """Hand each line of ``source`` to ``front`` until it ends; a line over the limit is
    skipped in pieces (never held whole) and answered with an error."""
    limit = MAX_MESSAGE_BYTES
    while not front.closed:
        line = source.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            front.handle(line)
            continue
        head, tail = line[:4096], line[-4096:]
        while line and not line.endswith(b"\n"):
            line = source.readline(limit)
            tail = (tail + line)[-4096:]
        front.too_long(head, tail)


_OPTIONS = {
    "--state-dir": "state_dir",
    "--store": "store_url",
    "--twin": "twin",
    "--twin-config": "twin_config",
    "--archive": "archive_url",
    "--session": "session",
}


def options_from_argv(argv: list[str]) -> dict[str, str] | None:
    """The options of an ``ipse mcp [OPTIONS]`` command line that serves stdio, read without
    the command-line framework; None for anything else (``--http``, ``--help``, an unknown or
    repeated option, a path of the wrong kind): the full command line then parses and reports
    it, so both read the same options the same way."""
    import os

    values: dict[str, str] = {}
    rest = list(argv)
    while rest:
        name, eq, value = rest[0].partition("=")
        key = _OPTIONS.get(name)
        if key is None or key in values:
            return None
        if not eq:
            if len(rest) < 2:
                return None
            value, rest = rest[1], rest[2:]
        else:
            rest = rest[1:]
        values[key] = value
    if "state_dir" not in values:
        env = os.environ.get("IPSE_STATE_DIR")
        if env == "":
            return None
        values["state_dir"] = env or "state"
    state_dir, twin_config = values["state_dir"], values.get("twin_config")
    if (os.path.exists(state_dir) and not os.path.isdir(state_dir)) or (
        twin_config is not None and os.path.isdir(twin_config)
    ):
        return None
    return values


def settings_of(values: dict[str, str]) -> Settings:
    """The server's settings for options read by `options_from_argv`."""
    from pathlib import Path

    from ipse.mcp._tools import Settings, default_session

    twin_config = values.get("twin_config")
    return Settings(
        session=values.get("session") or default_session(),
        state_dir=Path(values["state_dir"]),
        archive_url=values.get("archive_url"),
        store_url=values.get("store_url"),
        twin=values.get("twin"),
        twin_config=Path(twin_config) if twin_config is not None else None,
    )


def settings_from_argv(argv: list[str]) -> Settings | None:
    """The settings `options_from_argv` reads, or None."""
    values = options_from_argv(argv)
    return None if values is None else settings_of(values)


def _note_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def fast_entry(argv: list[str]) -> bool:
    """Serve ``ipse mcp [OPTIONS]`` (stdio) when ``argv`` (after ``mcp``) is one this module
    reads; False when the full command line must handle it. The settings (and the tools'
    code they import) are made after ``initialize`` is answered."""
    values = options_from_argv(argv)
    if values is None:
        return False
    from ipse import _notes

    _notes.to_stderr(_note_line)  # the library's notes, as the full command line shows them
    serve(lambda: settings_of(values), twin=bool(values.get("twin")))
    return True


def serve(
    settings: Settings | Callable[[], Settings],
    source: BinaryIO | None = None,
    out: Output | None = None,
    *,
    twin: bool = False,
) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin; the calls under way finish
    and answer first. (``twin``: as `Front` takes it.)"""
    if out is None:
        out = sys.stdout.buffer
        sys.stdout = sys.stderr  # stdout is the protocol's: a stray print goes to the log
    front = Front(settings, out, twin=twin)
    try:
        read_lines(source or sys.stdin.buffer, front)
    except KeyboardInterrupt:  # pragma: no cover (a terminal's Ctrl-C)
        pass
    finally:
        front.wait()


__all__ = [
    "MAX_MESSAGE_BYTES",
    "Front",
    "fast_entry",
    "instructions",
    "options_from_argv",
    "read_lines",
    "serve",
    "settings_from_argv",
    "settings_of",
]
