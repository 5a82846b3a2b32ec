"""ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

Public names are re-exported here, those of ``ipse.transcript`` on first use (a command that
never reads a conversation does not import its readers); the mechanisms live in their own
subpackages (``ipse.transcript``, ``ipse.handoff``, ``ipse.prefix``, ``ipse.twin``,
``ipse.statedir``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from ipse import _lazy
from ipse.errors import (
    CheckFailed,
    CutError,
    InputError,
    InvalidConversation,
    IpseError,
    MissingExtra,
    PrefixEdit,
    StaleWriter,
    StoreError,
    UnknownFormat,
    UsageError,
    WriterConflict,
)

_TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if _TYPE_CHECKING:
    from ipse.transcript import (
        Conversation,
        Message,
        Origin,
        Other,
        Text,
        Thinking,
        ToolCall,
        ToolDef,
        ToolResult,
        load,
        read_conversation,
        write,
    )

# Names served from ipse.transcript, imported on first use: a command that never reads a
# conversation (a SessionStart hook) does not pay for the readers of every format
# (``python bench/edge_tricks.py``; docs/development.md, "Speed at the edges").
_MODULES = {
    "transcript": (
        "Conversation",
        "Message",
        "Origin",
        "Other",
        "Text",
        "Thinking",
        "ToolCall",
        "ToolDef",
        "ToolResult",
        "load",
        "read_conversation",
        "write",
    )
}

__getattr__, __dir__ = _lazy.exports("ipse", _MODULES, globals())

__all__ = _lazy.public(
    _MODULES,
    "CheckFailed",
    "CutError",
    "InputError",
    "InvalidConversation",
    "IpseError",
    "MissingExtra",
    "PrefixEdit",
    "StaleWriter",
    "StoreError",
    "UnknownFormat",
    "UsageError",
    "WriterConflict",
    "__version__",
)
