"""One session identity: the key under which the proxy, the MCP server and ``ipse handoff`` file
a conversation's checkpoints and what its handoffs removed, derived the same way by all three.

The key is ``session:<id>``, ``<id>`` being the harness's own session id wherever the harness
gives one:

- Claude Code: the ``x-claude-code-session-id`` request header (or the ``session_id`` in the
  body's ``metadata.user_id`` JSON); for an MCP server, Claude Code's registry of its running
  sessions, read at each call (``claude -p --continue`` starts its servers under a session id
  it then leaves for the resumed one: `ipse.mcp._session`), else ``CLAUDE_CODE_SESSION_ID``;
  a session file's ``sessionId``.
- Codex: the ``session-id`` request header (``session_id`` / ``conversation_id`` in older
  versions); a rollout's ``session_meta`` id (the same id); for an MCP server,
  ``CODEX_THREAD_ID`` / ``CODEX_SESSION_ID`` when set, or the ``session_id`` / ``thread_id`` of
  the ``x-codex-turn-metadata`` a tool call's ``_meta`` carries (`meta_session`).

``IPSE_SESSION`` names the MCP server's session outright. Without any of these a front end
falls back on its own key (the proxy a hash of the conversation's start, the MCP server a fresh
``mcp-<uuid>``, the CLI a hash of the file), and then one more link holds the loop together: the
checkpoint tool's answer names the session it was recorded under (`MARKER`), and a handoff at
that checkpoint files what it removed under that session (`recorded_session`). Where the front
end and the answer both name a harness's session, the front end's own id wins over what the
answer claims (`ipse._sessions.filing_session`). So ``recall`` with
a checkpoint's id finds the items its handoff removed whichever part did the removing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ipse._sessions import (
    CLAUDE_CODE_HEADER,
    CODEX_HEADERS,
    PREFIX,
    filing_session,
    mcp_session,
    meta_session,
    request_session,
    session_key,
)
from ipse.errors import IpseError
from ipse.handoff._recognise import CHECKPOINT_TOOLS, checkpoint_tool_of, marked, result_text
from ipse.transcript import Conversation, ToolCall, ToolResult

if TYPE_CHECKING:
    from ipse.transcript._shared import Source


def source_session(source: Source) -> str:
    """The session key of a file ``ipse handoff`` reads: a Claude Code session's ``sessionId``,
    a Codex rollout's ``session_meta`` id, else ``sha256-`` and a hash of the file (a folder:
    its path)."""
    if source.session is not None:
        key = session_key(source.session.session_id)
        if key is not None:
            return key
    try:
        meta: Mapping[str, Any] = source.current().meta
    except IpseError:  # no conversation: the hash below names the input
        meta = {}
    key = session_key(meta.get("session"))
    if key is not None:
        return key
    path = source.path
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
    else:
        digest.update(str(path.resolve()).encode())
    return "sha256-" + digest.hexdigest()[:16]


def recorded_session(
    conversation: Conversation, tool_names: Sequence[str] = CHECKPOINT_TOOLS
) -> str | None:
    """The session the newest answered checkpoint call was recorded under, as its answer says."""
    results = {
        b.call_id: b for m in conversation.messages for b in m.blocks if isinstance(b, ToolResult)
    }
    found: str | None = None
    for message in conversation.messages:
        for block in message.blocks:
            if not isinstance(block, ToolCall):
                continue
            result = results.get(block.id)
            if result is None or not checkpoint_tool_of(block, tool_names, result):
                continue
            said = marked(result_text(result))
            if said is not None:
                found = said[1]
    return found


def handoff_session(source: Source, tool_names: Sequence[str] = CHECKPOINT_TOOLS) -> str:
    """The key ``ipse handoff`` archives under: the session the checkpoint was recorded under,
    unless that and the file's own are both a harness's session ids (then the file's: a Claude
    Code session's ``sessionId``, a Codex rollout's id; `ipse._sessions.filing_session`); else
    the file's own key (a hash of the file without one)."""
    try:
        recorded = recorded_session(source.current(), tool_names)
    except IpseError:  # no conversation: the harness's key
        recorded = None
    return filing_session(source_session(source), recorded)


__all__ = [
    "CLAUDE_CODE_HEADER",
    "CODEX_HEADERS",
    "PREFIX",
    "handoff_session",
    "mcp_session",
    "meta_session",
    "recorded_session",
    "request_session",
    "session_key",
    "source_session",
]
