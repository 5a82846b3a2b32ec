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

from ipse.archive._lookup import list_items, recall_item, search_items
from ipse.archive._open import open_archive
from ipse.archive._scope import Caller

__all__ = ["Caller", "list_items", "open_archive", "recall_item", "search_items"]
