"""Which session a tool call belongs to, read at every call: the harness may change its session
while the server runs.

The server's environment names a session once, when the harness starts it, and that is not
always the session the calls belong to: ``claude -p --continue`` (and ``--resume``) starts its
MCP servers under a new session id and only then switches to the resumed session, whose id the
requests carry (``x-claude-code-session-id``) and the session file is named after; ``/resume``
and ``/clear`` switch sessions under a running server too. So each call asks, in order:

1. a session given outright (``IPSE_SESSION``, ``ipse mcp --session``) stands as given;
2. the harness's own registry of the process that runs the server: Claude Code keeps
   ``~/.claude/sessions/<pid>.json`` (under ``CLAUDE_CONFIG_DIR`` when set) for each running
   process, its ``sessionId`` updated when it switches; the server's parent is that process (an
   ancestor, when a wrapper runs the server);
3. the call's ``_meta`` (Codex names its session there, `ipse._sessions.meta_session`);
4. the session the environment named at start (else the server's fresh ``mcp-`` key).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._sessions import is_fresh, mcp_session, meta_session, session_key

_ANCESTORS = 4  # processes up from the server searched for the harness's registry entry
_ENTRY_BYTES = 64 * 1024  # a registry entry is a few hundred bytes


def call_session(started: str, meta: Any = None, environ: Mapping[str, str] | None = None) -> str:
    """The session key of one tool call of a server that started with session ``started``
    (see the module docstring)."""
    environ = os.environ if environ is None else environ
    if not _from_environment(started, environ):
        return started  # given outright
    return claude_code_session(environ) or meta_session(meta) or started


def _from_environment(session: str, environ: Mapping[str, str]) -> bool:
    """Whether ``session`` is what the server derived from its environment at start (or its
    fresh key), not a session given outright."""
    if environ.get("IPSE_SESSION", "").strip():
        return False
    return is_fresh(session) or session == mcp_session(environ)


def claude_code_session(environ: Mapping[str, str], pid: int | None = None) -> str | None:
    """The session the Claude Code process running this one is in now, from Claude Code's
    registry of running sessions (None: not under Claude Code, or no entry found)."""
    if not (environ.get("CLAUDECODE") or environ.get("CLAUDE_CODE_SESSION_ID")):
        return None
    from ipse.transcript._shared import claude_config_dir

    folder = claude_config_dir() / "sessions"
    for ancestor in _ancestors(os.getppid() if pid is None else pid):
        found = _registered(folder / f"{ancestor}.json", ancestor)
        if found is not None:
            return found
    return None


def _registered(path: Path, pid: int) -> str | None:
    try:
        with path.open("rb") as file:
            data = file.read(_ENTRY_BYTES + 1)
    except OSError:
        return None
    if len(data) > _ENTRY_BYTES:
        return None
    try:
        entry = jsonio.loads(data)
    except (jsonio.JSONDecodeError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("pid") != pid:
        return None
    return session_key(entry.get("sessionId"))


def _ancestors(pid: int) -> Iterator[int]:
    """``pid`` and the processes above it (only ``pid`` where ``/proc`` cannot say)."""
    for _ in range(_ANCESTORS):
        if pid <= 1:
            return
        yield pid
        parent = _parent(pid)
        if parent is None:
            return
        pid = parent


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # "pid (command) state ppid ...": the command may hold spaces and parentheses
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


__all__ = ["call_session", "claude_code_session"]
