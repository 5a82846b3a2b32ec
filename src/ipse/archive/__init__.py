"""The archive of what a handoff removed: every tool call with its result, every thinking block.

Items are keyed by session, id and content (the call id; thinking blocks by a content hash),
stored once per distinct payload (content-addressed by sha256, zlib-compressed), given back byte
for byte, and searchable: by the words of the call and of its output, by the paths a call named,
by what it did (read, edit, command, other), in FTS5 on SQLite and a ``tsvector`` under GIN on
PostgreSQL. `open_archive` opens it on the same database as the other stores: SQLite in
IPSE_HOME by default, PostgreSQL with ``IPSE_DATABASE_URL`` or an explicit ``postgresql://`` URL.
`recall_item`, `search_items`, `list_items` and `list_sessions` are what front ends call: they
apply one rule for whose sessions a caller reads (`scope_for`).
"""

from __future__ import annotations

from ipse.archive._base import (
    Archivable,
    ArchiveSink,
    ArchiveStore,
    Found,
    Item,
    Match,
    Recalled,
    preview,
)
from ipse.archive._blobs import address, payload
from ipse.archive._facets import ACTIONS
from ipse.archive._lookup import (
    DEFAULT_LIMIT,
    Listed,
    Searched,
    list_items,
    list_sessions,
    recall_item,
    search_items,
)
from ipse.archive._open import LazyArchive, open_archive
from ipse.archive._schema import COMPONENT, STEPS
from ipse.archive._scope import SCOPES, Caller, Scope, cli_caller, project_key, scope_for

__all__ = [
    "ACTIONS",
    "COMPONENT",
    "DEFAULT_LIMIT",
    "SCOPES",
    "STEPS",
    "Archivable",
    "ArchiveSink",
    "ArchiveStore",
    "Caller",
    "Found",
    "Item",
    "LazyArchive",
    "Listed",
    "Match",
    "Recalled",
    "Scope",
    "Searched",
    "address",
    "cli_caller",
    "list_items",
    "list_sessions",
    "open_archive",
    "payload",
    "preview",
    "project_key",
    "recall_item",
    "scope_for",
    "search_items",
]
