"""The neutral transcript model, and the readers and writers of every supported format."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.transcript._codec import DIALECTS, Codec, Positions, body_codec, codec
    from ipse.transcript._formats import (
        FORMAT_TABLE,
        FORMATS,
        WRITABLE_FORMATS,
        Format,
        Shape,
        format_named,
    )
    from ipse.transcript._inspect import inspect_report, message_rows
    from ipse.transcript._jsonl import BAD_LINE, NOT_AN_OBJECT, parse_json, read_text_bytes
    from ipse.transcript._links import check_links
    from ipse.transcript._load import Source, load, read_conversation
    from ipse.transcript._locations import (
        claude_code_session_file,
        claude_config_dir,
        codex_session_file,
    )
    from ipse.transcript._model import (
        Block,
        Conversation,
        Dialect,
        Message,
        Origin,
        Other,
        Text,
        Thinking,
        ToolCall,
        ToolDef,
        ToolResult,
    )
    from ipse.transcript._sniff import body_dialect, detect, record_format
    from ipse.transcript._stats import TokenTally, block_kind, counted_text, without_payloads
    from ipse.transcript._thread import Segment, Thread
    from ipse.transcript._time import parse_time
    from ipse.transcript._write import ensure_writable, write
    from ipse.transcript.formats.claude_code import ClaudeCodeSession
    from ipse.transcript.formats.claude_code_stored import StoredMessage, results_only
    from ipse.transcript.formats.http_log import Exchange

# The names below are imported on first use: reading one format does not import the others'
# readers (``ipse prefix`` on a Claude Code session needs neither the HTTP-log nor the Codex
# reader, nor the loader that knows them all; ``python bench/edge_tricks.py`` measures it, and
# docs/development.md, "Speed at the edges", says when such a trick is kept).
_MODULES = {
    "_codec": ("DIALECTS", "Codec", "Positions", "body_codec", "codec"),
    "_formats": (
        "FORMAT_TABLE",
        "FORMATS",
        "WRITABLE_FORMATS",
        "Format",
        "Shape",
        "format_named",
    ),
    "_inspect": ("inspect_report", "message_rows"),
    "_jsonl": ("BAD_LINE", "NOT_AN_OBJECT", "parse_json", "read_text_bytes"),
    "_links": ("check_links",),
    "_load": ("Source", "load", "read_conversation"),
    "_locations": ("claude_code_session_file", "claude_config_dir", "codex_session_file"),
    "_model": (
        "Block",
        "Conversation",
        "Dialect",
        "Message",
        "Origin",
        "Other",
        "Text",
        "Thinking",
        "ToolCall",
        "ToolDef",
        "ToolResult",
    ),
    "_sniff": ("body_dialect", "detect", "record_format"),
    "_stats": ("TokenTally", "block_kind", "counted_text", "without_payloads"),
    "_thread": ("Segment", "Thread"),
    "_time": ("parse_time",),
    "_write": ("ensure_writable", "write"),
    "formats.claude_code": ("ClaudeCodeSession",),
    "formats.claude_code_stored": ("StoredMessage", "results_only"),
    "formats.http_log": ("Exchange",),
}


__getattr__, __dir__ = _lazy.exports("ipse.transcript", _MODULES, globals())


__all__ = _lazy.public(_MODULES)
