"""What `ipse.transcript` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.transcript.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.transcript._codec import Codec, Positions, body_codec, codec
    from ipse.transcript._formats.claude_code import (
        MAIN,
        ClaudeCodeSession,
        as_harness,
        read_session,
    )
    from ipse.transcript._formats.claude_code_journal import JournaledRequest, read_journal
    from ipse.transcript._formats.claude_code_requests import billed_thread
    from ipse.transcript._formats.claude_code_session import (
        TESTED_VERSION,
        project_folder,
        write_session,
    )
    from ipse.transcript._formats.claude_code_stored import StoredMessage, results_only
    from ipse.transcript._formats.claude_code_tree import has_journal
    from ipse.transcript._formats.codex import rollout_requests
    from ipse.transcript._formats.http_log import (
        entry_conversation,
        exchange_fields,
        exchange_record,
        iter_entries,
        usage_of,
    )
    from ipse.transcript._formats.openai_responses import read_item
    from ipse.transcript._inspect import inspect_report, message_rows
    from ipse.transcript._jsonl import BAD_LINE, NOT_AN_OBJECT, parse_json, read_text_bytes
    from ipse.transcript._links import check_links
    from ipse.transcript._load import Source
    from ipse.transcript._locations import (
        claude_code_session_file,
        claude_config_dir,
        codex_session_file,
    )
    from ipse.transcript._model import Block, Dialect, Origin
    from ipse.transcript._sniff import body_dialect, record_format
    from ipse.transcript._stats import TokenTally, block_kind, counted_text, without_payloads
    from ipse.transcript._table import FORMAT_TABLE, WRITABLE_FORMATS, Shape, format_named
    from ipse.transcript._time import parse_time
    from ipse.transcript._write import ensure_writable

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_codec": ("Codec", "Positions", "body_codec", "codec"),
    "_formats.claude_code": ("MAIN", "ClaudeCodeSession", "as_harness", "read_session"),
    "_formats.claude_code_journal": ("JournaledRequest", "read_journal"),
    "_formats.claude_code_requests": ("billed_thread",),
    "_formats.claude_code_session": ("TESTED_VERSION", "project_folder", "write_session"),
    "_formats.claude_code_stored": ("StoredMessage", "results_only"),
    "_formats.claude_code_tree": ("has_journal",),
    "_formats.codex": ("rollout_requests",),
    "_formats.http_log": (
        "entry_conversation",
        "exchange_fields",
        "exchange_record",
        "iter_entries",
        "usage_of",
    ),
    "_formats.openai_responses": ("read_item",),
    "_inspect": ("inspect_report", "message_rows"),
    "_jsonl": ("BAD_LINE", "NOT_AN_OBJECT", "parse_json", "read_text_bytes"),
    "_links": ("check_links",),
    "_load": ("Source",),
    "_locations": ("claude_code_session_file", "claude_config_dir", "codex_session_file"),
    "_model": ("Block", "Dialect", "Origin"),
    "_sniff": ("body_dialect", "record_format"),
    "_stats": ("TokenTally", "block_kind", "counted_text", "without_payloads"),
    "_table": ("FORMAT_TABLE", "WRITABLE_FORMATS", "Shape", "format_named"),
    "_time": ("parse_time",),
    "_write": ("ensure_writable",),
}

__getattr__, __dir__ = _lazy.exports("ipse.transcript", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
