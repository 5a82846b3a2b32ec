"""Writing a conversation back as a request body, in its own dialect."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ipse.errors import UsageError
from ipse.transcript._codec import DIALECTS, codec
from ipse.transcript._model import Conversation
from ipse.transcript._table import WRITABLE_FORMATS, format_named


def ensure_writable(conversation: Conversation) -> None:
    """Raise `UsageError` for a conversation read from a format ipse does not write back,
    saying why (the format table's reason) and which inputs it does write back."""
    name = conversation.meta.get("format")
    entry = format_named(name) if isinstance(name, str) else None
    reason = entry.read_only if entry is not None else None
    if reason is None and not conversation.meta.get("read_only"):
        return
    why = f" ({reason})" if reason else ""
    raise UsageError(
        f"{name or 'this format'} conversations are read only: ipse cannot write them back as "
        f"a request{why}; the inputs it writes back are {', '.join(WRITABLE_FORMATS)} "
        f"(as {', '.join(DIALECTS)} bodies)"
    )


def write(
    conversation: Conversation, dialect: str | None = None, *, max_tokens: int | None = None
) -> dict[str, Any]:
    """The conversation as a request body of ``dialect`` (default: its own).

    ``max_tokens`` is given to a body without one, for the dialects whose API requires it
    (Anthropic: a Claude Code session file carries none); naming it for another dialect is a
    usage error rather than a setting silently dropped.
    """
    ensure_writable(conversation)
    target = codec(dialect or conversation.dialect)
    if target.dialect != conversation.dialect:
        raise UsageError(f"cannot write a {conversation.dialect} conversation as {target.dialect}")
    if max_tokens is not None:
        if not target.needs_max_tokens:
            raise UsageError(f"max_tokens is for bodies that require it; {target.dialect} does not")
        if max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, not {max_tokens}")
        if "max_tokens" not in conversation.settings:
            settings = {**conversation.settings, "max_tokens": max_tokens}
            conversation = replace(conversation, settings=settings)
    return target.write_body(conversation)


__all__ = ["WRITABLE_FORMATS", "ensure_writable", "write"]
