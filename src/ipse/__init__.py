"""ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

Public names are re-exported here, those of ``ipse.transcript`` on first use (a command that
never reads a conversation does not import its readers); the mechanisms live in their own
subpackages (``ipse.transcript``, ``ipse.handoff``, ``ipse.prefix``, ``ipse.twin``,
``ipse.statedir``).
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

_TYPE_CHECKING = False  # (`typing` is not imported at run time: the hook's start)
if _TYPE_CHECKING:
    from typing import Any as _Any

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
# conversation (a SessionStart hook) does not pay for the readers of every format.
_LAZY = frozenset(
    {
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
    }
)


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        import ipse.transcript

        value = getattr(ipse.transcript, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ipse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)


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
