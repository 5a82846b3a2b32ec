"""The session key: ``session:<id>``, ``<id>`` being the harness's own session id, as the proxy
(a request's headers), the MCP server (its environment, a tool call's ``_meta``) and ``ipse
handoff`` (`ipse.handoff.handoff_session`: a file's session id) all derive it. Light on purpose
(the standard library and ``orjson``): the MCP server asks it while it starts. The sources of
each harness's id are listed in `ipse.handoff._session`. Wherever a user names a session, the
agent CLI's bare id and its key name the same one (`session_names`); `environ_session` is the
session a process's environment names (what a command line run inside an agent is part of).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ipse import jsonio

PREFIX = "session:"
FRESH = "mcp-"  # the MCP server's own key when no harness id is known
CLAUDE_CODE_HEADER = "x-claude-code-session-id"
# Codex CLI 0.169 sends ``session-id`` (and ``thread-id``, the same id); earlier versions
# ``session_id`` and ``conversation_id``.
CODEX_HEADERS = ("session-id", "session_id", "conversation_id", "thread-id")
_SESSION_HEADERS = (CLAUDE_CODE_HEADER, *CODEX_HEADERS)
_ENVIRONMENT = ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "CODEX_SESSION_ID")
_TURN_METADATA = "x-codex-turn-metadata"


def session_key(harness_id: object) -> str | None:
    """The key of a harness's session id (``session:<id>``); None for no usable id."""
    if not isinstance(harness_id, str):
        return None
    value = harness_id.strip()
    if not value or len(value) > 200 or not value.isprintable():
        return None
    return value if value.startswith(PREFIX) else PREFIX + value


def request_session(
    headers: Mapping[str, str], body: Mapping[str, Any] | None = None
) -> str | None:
    """The session key a request's harness gives (headers, then Claude Code's metadata)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name in _SESSION_HEADERS:
        key = session_key(lowered.get(name))
        if key is not None:
            return key
    key = _turn_metadata_session(lowered.get(_TURN_METADATA))
    if key is not None:
        return key
    metadata = body.get("metadata") if isinstance(body, Mapping) else None
    user = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user, str) and user.startswith("{"):
        try:
            parsed = jsonio.loads(user)
        except (jsonio.JSONDecodeError, ValueError):
            return None
        if isinstance(parsed, Mapping):
            return session_key(parsed.get("session_id"))
    return None


def meta_session(meta: Any) -> str | None:
    """The session key in an MCP tool call's ``_meta``: Codex 0.169 sends its session id there
    as ``sessionId`` and in ``x-codex-turn-metadata`` (an object, or its JSON)."""
    if not isinstance(meta, Mapping):
        return None
    return (
        _turn_metadata_session(meta.get(_TURN_METADATA))
        or session_key(meta.get("sessionId"))
        or session_key(meta.get("session_id"))
        or session_key(meta.get("threadId"))
    )


def is_fresh(session: str) -> bool:
    """Whether a key is the MCP server's own fallback (no harness id was found at start)."""
    return session.startswith(FRESH)


def filing_session(own: str, claimed: str | None) -> str:
    """The session a handoff files what it removed under, given the front end's own key and the
    session a checkpoint's answer claims it was recorded under (None: no claim).

    Where both are a harness's session id, the front end's own wins: it is what the request or
    the session file says now (an MCP server may have started under an id its harness then
    left). Otherwise the claim wins: the server knew the session where the front end did not,
    or it files under a key of its own (``IPSE_SESSION``, its fresh ``mcp-`` key), and the
    checkpoint's items go with its notes."""
    if claimed is None or (own.startswith(PREFIX) and claimed.startswith(PREFIX)):
        return own
    return claimed


def _turn_metadata_session(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = jsonio.loads(value)
        except (jsonio.JSONDecodeError, ValueError):
            return None
    if not isinstance(value, Mapping):
        return None
    return session_key(value.get("session_id")) or session_key(value.get("thread_id"))


def environ_session(environ: Mapping[str, str]) -> str | None:
    """The session a process's environment names: ``IPSE_SESSION`` as given, else the
    agent CLI's session id (``CLAUDE_CODE_SESSION_ID``, Codex's thread id) as a key; None."""
    given = environ.get("IPSE_SESSION", "").strip()
    if given:
        return given
    for name in _ENVIRONMENT:
        key = session_key(environ.get(name))
        if key is not None:
            return key
    return None


def mcp_session(environ: Mapping[str, str], meta: Any = None) -> str:
    """The MCP server's session key: ``IPSE_SESSION`` as given, else the harness's session id
    (its environment, then the request's ``_meta``), else a fresh ``mcp-<uuid>``."""
    return environ_session(environ) or meta_session(meta) or f"{FRESH}{uuid.uuid4()}"


def session_names(name: str) -> tuple[str, ...]:
    """The keys a session named ``name`` may be stored under, in the order to try them: the
    name as given, then its other form, so an agent CLI's bare id (``f0a5...``) and its key
    (``session:f0a5...``) name the same session wherever a session is named."""
    value = name.strip()
    if not value:
        return ()
    other = value[len(PREFIX) :] if value.startswith(PREFIX) else PREFIX + value
    return (value, other) if other else (value,)


__all__ = [
    "CLAUDE_CODE_HEADER",
    "CODEX_HEADERS",
    "FRESH",
    "PREFIX",
    "environ_session",
    "filing_session",
    "is_fresh",
    "mcp_session",
    "meta_session",
    "request_session",
    "session_key",
    "session_names",
]
