"""The neutral transcript model, and the readers and writers of every supported format."""

from __future__ import annotations

from typing import Any

from ipse.transcript._load import Source, load, read_conversation
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
from ipse.transcript._sniff import FORMATS, body_dialect, detect
from ipse.transcript._thread import Segment, Thread
from ipse.transcript.formats.claude_code import ClaudeCodeSession
from ipse.transcript.formats.http_log import Exchange


def write(conversation: Conversation, dialect: str | None = None) -> dict[str, Any]:
    """The conversation as a request body of ``dialect`` (default: its own)."""
    from ipse.errors import UsageError
    from ipse.transcript.formats import anthropic, openai_chat

    target = dialect or conversation.dialect
    if target == "anthropic":
        if conversation.dialect not in ("anthropic",):
            raise UsageError(f"cannot write a {conversation.dialect} conversation as anthropic")
        return anthropic.write_body(conversation)
    if target == "openai-chat":
        if conversation.dialect != "openai-chat":
            raise UsageError(f"cannot write a {conversation.dialect} conversation as openai-chat")
        return openai_chat.write_body(conversation)
    raise UsageError(f"no writer for {target!r}; writers: anthropic, openai-chat")


__all__ = [
    "FORMATS",
    "Block",
    "ClaudeCodeSession",
    "Conversation",
    "Dialect",
    "Exchange",
    "Message",
    "Origin",
    "Other",
    "Segment",
    "Source",
    "Text",
    "Thinking",
    "Thread",
    "ToolCall",
    "ToolDef",
    "ToolResult",
    "body_dialect",
    "detect",
    "load",
    "read_conversation",
    "write",
]
