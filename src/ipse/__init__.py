"""ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

Public names are re-exported here; the mechanisms live in their own subpackages
(``ipse.transcript``, ``ipse.handoff``, ``ipse.prefix``, ``ipse.twin``, ``ipse.statedir``).
"""

from __future__ import annotations

__version__ = "0.1.0"

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

__all__ = [
    "CheckFailed",
    "Conversation",
    "CutError",
    "InputError",
    "InvalidConversation",
    "IpseError",
    "Message",
    "MissingExtra",
    "Origin",
    "Other",
    "PrefixEdit",
    "StaleWriter",
    "StoreError",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolDef",
    "ToolResult",
    "UnknownFormat",
    "UsageError",
    "WriterConflict",
    "__version__",
    "load",
    "read_conversation",
    "write",
]
