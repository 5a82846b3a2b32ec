"""Writing a conversation back as a request body, in its own dialect."""

from __future__ import annotations

from typing import Any

from ipse.errors import UsageError
from ipse.transcript._codec import codec
from ipse.transcript._model import Conversation


def write(conversation: Conversation, dialect: str | None = None) -> dict[str, Any]:
    """The conversation as a request body of ``dialect`` (default: its own)."""
    target = codec(dialect or conversation.dialect)
    if target.dialect != conversation.dialect:
        raise UsageError(f"cannot write a {conversation.dialect} conversation as {target.dialect}")
    return target.write_body(conversation)


__all__ = ["write"]
