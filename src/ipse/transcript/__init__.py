"""The neutral transcript model, and the readers and writers of every supported format."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.transcript._load import load, read_conversation
    from ipse.transcript._model import (
        Conversation,
        Message,
        Other,
        Text,
        Thinking,
        ToolCall,
        ToolResult,
    )
    from ipse.transcript._sniff import detect
    from ipse.transcript._table import FORMATS
    from ipse.transcript._write import write

# The names below are imported on first use: reading one format does not import the others'
# readers (``ipse prefix`` on a Claude Code session needs neither the HTTP-log nor the Codex
# reader, nor the loader that knows them all; ``python bench/edge_tricks.py`` measures it, and
# docs/development.md, "Speed at the edges", says when such a trick is kept).
_MODULES = {
    "_table": ("FORMATS",),
    "_load": ("load", "read_conversation"),
    "_model": ("Conversation", "Message", "Other", "Text", "Thinking", "ToolCall", "ToolResult"),
    "_sniff": ("detect",),
    "_write": ("write",),
}


__getattr__, __dir__ = _lazy.exports("ipse.transcript", _MODULES, globals())


__all__ = _lazy.public(_MODULES)
