"""Whose archive a lookup reads: the caller, and the one rule that turns its request into a scope.

An archive may be shared (PostgreSQL for many machines), so a lookup never reads every session
unless asked. The caller is who asks: the session it runs in (the MCP server's own session; for
the command line, ``IPSE_SESSION`` or the agent CLI's session id in its environment) and its
project (the repository holding its working folder, else that folder). `scope_for` is the rule
every front end applies, the MCP server, the command line and the adapters alike:

- a session named outright is that session (the agent CLI's bare id or ``session:<id>``);
- scope ``all`` is every session, ``project`` every session filed under the caller's project;
- otherwise (scope ``session`` or none) the caller's session; with none known and no scope
  asked, the caller's project; with neither known, a `UsageError` saying what to give.

An id lookup without a named session or scope tries the caller's session, then its project
(`id_scopes`): an id the agent was shown, or a checkpoint it recorded in an earlier session of
the same project, is found; a search stays in the one scope `scope_for` gives.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ipse.errors import UsageError

SESSION, PROJECT, ALL = "session", "project", "all"
SCOPES = (SESSION, PROJECT, ALL)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the session it runs in and its project, each None where unknown."""

    session: str | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class Scope:
    """The sessions a lookup reads: one session, a project's, or all."""

    name: str
    session: str | None = None  # for SESSION: the session as named
    project: str | None = None  # for PROJECT

    def describe(self) -> str:
        if self.name == SESSION:
            return f"session {self.session!r}"
        if self.name == PROJECT:
            return "this project's sessions"
        return "every session"


def project_key(folder: str | Path) -> str:
    """The project a folder belongs to: the nearest folder at or above it that holds ``.git``,
    else the folder itself; an absolute path."""
    start = Path(os.path.abspath(folder))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(start)


def cli_caller(environ: Mapping[str, str], cwd: str | Path) -> Caller:
    """The caller a command line is: the session its environment names (``IPSE_SESSION``, the
    agent CLI's session id), and the project of its working folder."""
    from ipse._sessions import environ_session

    return Caller(environ_session(environ), project_key(cwd))


def scope_for(caller: Caller, *, session: str | None = None, scope: str | None = None) -> Scope:
    """The scope of a lookup by ``caller`` that named ``session`` and/or ``scope`` (see the
    module); `UsageError` when it asks for what is not known or contradicts itself."""
    if scope is not None and scope not in SCOPES:
        raise UsageError(f"scope {scope!r}: use one of {', '.join(SCOPES)}")
    if session is not None and session.strip():
        if scope not in (None, SESSION):
            raise UsageError(f"give a session or scope {scope}, not both")
        return Scope(SESSION, session=session.strip())
    if scope == ALL:
        return Scope(ALL)
    if scope == PROJECT:
        if caller.project is None:
            raise UsageError("scope project: no project is known here; name a session")
        return Scope(PROJECT, project=caller.project)
    if caller.session is not None:
        return Scope(SESSION, session=caller.session)
    if scope is None and caller.project is not None:
        return Scope(PROJECT, project=caller.project)
    raise UsageError(
        "no session is known here: name one (session), or ask for scope project or all"
    )


def id_scopes(
    caller: Caller, *, session: str | None = None, scope: str | None = None
) -> tuple[Scope, ...]:
    """The scopes an id is looked up in, in order: as `scope_for` says; without a named session
    or scope, the caller's session and then its project."""
    first = scope_for(caller, session=session, scope=scope)
    if session is None and scope is None and first.name == SESSION and caller.project:
        return (first, Scope(PROJECT, project=caller.project))
    return (first,)


__all__ = [
    "ALL",
    "PROJECT",
    "SCOPES",
    "SESSION",
    "Caller",
    "Scope",
    "cli_caller",
    "id_scopes",
    "project_key",
    "scope_for",
]
