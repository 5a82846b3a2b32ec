"""The archive's tables, as migration steps of the shared registry (component ``archive``).

``archive_blobs`` holds each distinct JSON payload once, keyed by the sha256 of its bytes,
zlib-compressed. ``archive_items`` says which session removed which item (a tool call with its
result, a thinking block, a server-tool pair), with a preview for listings. New steps are
appended, never edited.

Step 2 rewrites the key columns (session, item id) to `ipse.archive._sql.stored_key` form,
every backslash doubled, by copying the items into a new table: updating in place could meet
two keys that only differ in their backslashes halfway. A key stored by step 1 with an escape
for NUL or a lone surrogate reads back as the escape's own text (which one it was is not
recorded).
"""

from __future__ import annotations

from ipse.store import MigrationStep, register

COMPONENT = "archive"

_ITEMS_SQLITE = (
    "( session TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL,"
    " tool TEXT NOT NULL, preview TEXT NOT NULL, size INTEGER NOT NULL,"
    " call_sha256 TEXT NOT NULL REFERENCES archive_blobs (sha256),"
    " result_sha256 TEXT REFERENCES archive_blobs (sha256),"
    " position INTEGER NOT NULL, source TEXT NOT NULL,"
    " created_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0),"
    " PRIMARY KEY (session, item_id))"
)
_ITEMS_POSTGRES = (
    "( session TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL,"
    " tool TEXT NOT NULL, preview TEXT NOT NULL, size BIGINT NOT NULL,"
    " call_sha256 TEXT NOT NULL REFERENCES archive_blobs (sha256),"
    " result_sha256 TEXT REFERENCES archive_blobs (sha256),"
    " position INTEGER NOT NULL, source TEXT NOT NULL,"
    " created_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
    " PRIMARY KEY (session, item_id))"
)
# the items copied with their key columns' backslashes doubled (SQL: replace(x, '\', '\\'))
_COPY_ITEMS = (
    "INSERT INTO archive_items_2 SELECT replace(session, '\\', '\\\\'),"
    " replace(item_id, '\\', '\\\\'), kind, tool, preview, size, call_sha256, result_sha256,"
    " position, source, created_at FROM archive_items"
)

STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(
        number=1,
        name="archive blobs and items",
        sqlite=(
            "CREATE TABLE archive_blobs ("
            " sha256 TEXT PRIMARY KEY, codec TEXT NOT NULL, size INTEGER NOT NULL,"
            " data BLOB NOT NULL)",
            "CREATE TABLE archive_items " + _ITEMS_SQLITE,
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
        postgres=(
            "CREATE TABLE archive_blobs ("
            " sha256 TEXT PRIMARY KEY, codec TEXT NOT NULL, size BIGINT NOT NULL,"
            " data BYTEA NOT NULL)",
            "CREATE TABLE archive_items " + _ITEMS_POSTGRES,
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
    ),
    MigrationStep(
        number=2,
        name="archive keys with backslashes doubled",
        sqlite=(
            "CREATE TABLE archive_items_2 " + _ITEMS_SQLITE,
            _COPY_ITEMS,
            "DROP TABLE archive_items",
            "ALTER TABLE archive_items_2 RENAME TO archive_items",
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
        postgres=(
            "CREATE TABLE archive_items_2 " + _ITEMS_POSTGRES,
            _COPY_ITEMS,
            "DROP TABLE archive_items",
            "ALTER TABLE archive_items_2 RENAME TO archive_items",
            "ALTER TABLE archive_items RENAME CONSTRAINT archive_items_2_pkey"
            " TO archive_items_pkey",
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
    ),
)


def ensure_registered() -> None:
    """Register the archive's steps (idempotent); called when an archive is opened."""
    register(COMPONENT, STEPS)


__all__ = ["COMPONENT", "STEPS", "ensure_registered"]
