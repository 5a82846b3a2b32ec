"""Recall, search and listing as every front end asks for them: one set of functions, one rule.

The MCP server's ``recall`` and ``archive_list`` tools, ``ipse recall`` and ``ipse archive
list`` call these with their `Caller` (`ipse.archive._scope`), so the scope a lookup reads and
the refusals it meets are the same whichever asked: an id is looked up in the caller's session,
then its project, unless a session or a scope is named; a search and a listing read the scope
`scope_for` gives; an id two different items of one session share is refused
(`ipse.archive._sql`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ipse.archive._base import ArchiveStore, Found, Item, Recalled
from ipse.archive._facets import ACTIONS
from ipse.archive._index import Ask
from ipse.archive._scope import Caller, Scope, id_scopes, scope_for
from ipse.archive._text import query_words, words
from ipse.errors import InputError, UsageError

DEFAULT_LIMIT = 10
MAX_LIMIT = 100


@dataclass(frozen=True, slots=True)
class Searched:
    """A search's answer and the scope it read."""

    found: Found
    scope: Scope


@dataclass(frozen=True, slots=True)
class Listed:
    """A listing's items (newest first) and the scope it read."""

    items: tuple[Item, ...]
    scope: Scope


def recall_item(
    archive: ArchiveStore,
    caller: Caller,
    item_id: str,
    *,
    session: str | None = None,
    scope: str | None = None,
) -> Recalled:
    """The item ``item_id`` (or its full id, ``id@hex``) in the caller's reach; `InputError`
    naming where it looked when it is not there, `UsageError` when it is ambiguous."""
    scopes = id_scopes(caller, session=session, scope=scope)
    for each in scopes:
        try:
            return archive.find(item_id, each)
        except InputError:
            continue
    looked = " or ".join(s.describe() for s in scopes)
    hint = "" if scopes[-1].name == "all" else "; scope all looks in every session"
    raise InputError(f"no archived item {item_id!r} in {looked}{hint}")


def search_items(
    archive: ArchiveStore,
    caller: Caller,
    *,
    query: str | None = None,
    path: str | None = None,
    kind: str | None = None,
    session: str | None = None,
    scope: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Searched:
    """The items in scope holding every word of ``query``, that named ``path`` (the file or a
    folder above it), of action ``kind``; best first (`ipse.archive._sql.SqlArchive.search`)."""
    ask = Ask(
        words=tuple(query_words(query)) if query is not None and query.strip() else (),
        path=_path(path),
        path_words=tuple(words(path)) if path is not None and path.strip() else (),
        action=_kind(kind),
    )
    if not (ask.words or ask.path or ask.action):
        raise UsageError("a search needs a query, a path or a kind")
    where = scope_for(caller, session=session, scope=scope)
    return Searched(archive.search(ask, where, _limit(limit)), where)


def list_items(
    archive: ArchiveStore,
    caller: Caller,
    *,
    session: str | None = None,
    scope: str | None = None,
    kind: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Listed:
    """The items in scope, newest first, ``limit`` from ``offset``."""
    if offset < 0:
        raise UsageError("offset: must be 0 or more")
    where = scope_for(caller, session=session, scope=scope)
    items = archive.listing(where, _kind(kind), _limit(limit), offset)
    return Listed(tuple(items), where)


def list_sessions(
    archive: ArchiveStore, caller: Caller, *, scope: str | None = None
) -> tuple[list[tuple[str, int]], Scope]:
    """The sessions in scope with their item counts, and the scope."""
    where = scope_for(caller, scope=scope)
    return archive.sessions(where), where


def _kind(kind: str | None) -> str | None:
    if kind is None or not kind.strip():
        return None
    value = kind.strip().lower()
    if value not in ACTIONS:
        raise UsageError(f"kind {kind!r}: use one of {', '.join(ACTIONS)}")
    return value


def _path(path: str | None) -> str | None:
    if path is None or not path.strip():
        return None
    if "\n" in path or not path.strip("/\\. "):
        raise UsageError(f"path {path[:80]!r}: give a file or folder path on one line")
    return path.strip()


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit: must be between 1 and {MAX_LIMIT}")
    return limit


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Listed",
    "Searched",
    "list_items",
    "list_sessions",
    "recall_item",
    "search_items",
]
