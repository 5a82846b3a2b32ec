"""The MCP server's ``recall`` and ``archive_list`` tools: their schemas, descriptions and runs.

Each is one call of the archive's front-end functions (`ipse.archive.recall_item`,
`search_items`, `list_items`) with the server as the caller (`caller`: its session and the
project of its working folder), so the scope and the refusals are those of ``ipse recall``;
here the answer becomes text for the model (a recalled item in pages of ``max_chars``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse.errors import UsageError
from ipse.mcp._schemas import object_schema

if TYPE_CHECKING:
    from ipse.mcp._tools import Settings

RECALL_CHARS = 8000  # the default size of one recall page
RECALL_MAX_CHARS = 100_000
RECALL_DESCRIPTION = (
    "Get back what a handoff removed. With id (as a breadcrumb, the ledger or a search shows "
    "it; a start no other id shares will do): the tool call and its result, whole. With "
    "query, path and/or kind: the best matches in this "
    "session (scope project or all looks further), each with its id and a line of it. With "
    "checkpoint: its notes and the items its session's handoffs removed. Long output comes in "
    "pages: call again with next_offset."
)
LIST_DESCRIPTION = (
    "List what handoffs removed from this session (scope project or all looks further), "
    "newest first: each item's id, kind (read, edit, command, other), tool and argument. "
    "recall gives one whole by its id."
)

_SCOPE = {
    "type": "string",
    "enum": ["session", "project", "all"],
    "description": "Where to look: this session (the default), every session of this "
    "project, or every session.",
}
_KIND = {
    "type": "string",
    "enum": ["read", "edit", "command", "other"],
    "description": "What the call did.",
}
RECALL_SCHEMA = object_schema(
    {
        "id": {
            "type": "string",
            "description": "An archived item's id, as a breadcrumb or a search shows it.",
        },
        "query": {"type": "string", "description": "Find items holding every word of this."},
        "path": {
            "type": "string",
            "description": "Find items that named this file (or a folder above it).",
        },
        "kind": _KIND,
        "scope": _SCOPE,
        "checkpoint": {
            "type": "string",
            "description": "A checkpoint id: its notes and the items its session's handoffs "
            "removed.",
        },
        "session": {
            "type": "string",
            "description": "Look in this session instead (an agent CLI's session id or "
            "session:<id>).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "description": "Matches to give (default 10).",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "Continue from this character (the next_offset of the last page).",
        },
        "max_chars": {
            "type": "integer",
            "minimum": 100,
            "maximum": RECALL_MAX_CHARS,
            "description": f"Page size in characters (default {RECALL_CHARS}).",
        },
    }
)
_SEARCH_ARGS = ("query", "path", "kind")


def caller(settings: Settings) -> Any:
    """Who asks, for the archive's scope rule: this server's session and its folder's project."""
    from ipse.archive import Caller
    from ipse.archive._shared import project_key

    return Caller(settings.session, project_key(settings.cwd))


def recall(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.archive import open_archive, recall_item

    item_id, checkpoint = args.get("id"), args.get("checkpoint")
    searching = any(args.get(k) is not None for k in _SEARCH_ARGS)
    if (item_id is not None) + (checkpoint is not None) + searching != 1:
        raise UsageError("recall: give one of id, checkpoint, or query/path/kind")
    where = {"session": args.get("session"), "scope": args.get("scope")}
    archive = open_archive(settings.archive_url)
    try:
        if searching:
            return _search(archive, settings, args)
        found = recall_item(archive, caller(settings), str(item_id or checkpoint), **where)
        if item_id is not None:
            parts = [found.call.decode("utf-8", "replace")]
            if found.result is not None:
                parts.append(found.result.decode("utf-8", "replace"))
            whole, key = "\n".join(parts), found.item.id
        else:
            whole, key = _checkpoint_text(archive, found), str(checkpoint)
    finally:
        archive.close()
    offset = int(args.get("offset", 0))
    size = int(args.get("max_chars", RECALL_CHARS))
    page = whole[offset : offset + size]
    more = offset + size < len(whole)
    text = page + (
        f"\n[… {len(whole) - offset - size} more characters: call recall again with "
        f"offset={offset + size}]"
        if more
        else ""
    )
    return {
        "id": key,
        "offset": offset,
        "total_chars": len(whole),
        "next_offset": offset + size if more else None,
        "text": text,
    }


def _search(archive: Any, settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.archive import search_items

    searched = search_items(
        archive,
        caller(settings),
        query=args.get("query"),
        path=args.get("path"),
        kind=args.get("kind"),
        session=args.get("session"),
        scope=args.get("scope"),
        limit=int(args.get("limit", 10)),
    )
    matches = searched.found.matches
    where = searched.scope.describe()
    own = settings.session
    lines = [f"{len(matches)} match(es) in {where}" + (":" if matches else ".")]
    for match in matches:
        item = match.item
        session = "" if item.session == own else f" (session {item.session})"
        lines.append(f"- {item.id} [{item.action} {item.tool}]{session} {match.excerpt}")
    if matches:
        lines.append("recall with id=ID gives an item whole.")
    return {
        "scope": where,
        "matches": [m.to_json() for m in matches],
        "text": "\n".join(lines),
    }


def _checkpoint_text(archive: Any, found: Any) -> str:
    from ipse.handoff._shared import checkpoint_items

    _row, items = checkpoint_items(archive, found.item.id)
    notes = jsonio.loads(found.result)["text"] if found.result else ""
    lines = [str(notes), "", f"Removed in this session ({len(items)} items; recall by id):"]
    lines.extend(f"- {i.id} [{i.kind} {i.tool}] {i.preview} ({i.size} bytes)" for i in items)
    return "\n".join(lines)


LIST_SCHEMA = object_schema(
    {
        "scope": _SCOPE,
        "session": {
            "type": "string",
            "description": "List this session instead (an agent CLI's session id or session:<id>).",
        },
        "kind": _KIND,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "Items to list (default 30).",
        },
        "offset": {"type": "integer", "minimum": 0, "description": "Items to skip first."},
    }
)


def listing(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.archive import list_items, open_archive

    archive = open_archive(settings.archive_url)
    try:
        listed = list_items(
            archive,
            caller(settings),
            session=args.get("session"),
            scope=args.get("scope"),
            kind=args.get("kind"),
            limit=int(args.get("limit", 30)),
            offset=int(args.get("offset", 0)),
        )
    finally:
        archive.close()
    where = listed.scope.describe()
    lines = [f"{len(listed.items)} archived item(s) in {where}, newest first:"]
    for item in listed.items:
        session = "" if item.session == settings.session else f" (session {item.session})"
        lines.append(f"- {item.id} [{item.action} {item.tool}]{session} {item.preview}")
    return {
        "scope": where,
        "items": [i.to_json() for i in listed.items],
        "text": "\n".join(lines),
    }


__all__ = [
    "LIST_DESCRIPTION",
    "LIST_SCHEMA",
    "RECALL_CHARS",
    "RECALL_DESCRIPTION",
    "RECALL_MAX_CHARS",
    "RECALL_SCHEMA",
    "caller",
    "listing",
    "recall",
]
