"""The archive's tables, as migration steps of the shared registry (component ``archive``).

``archive_blobs`` holds each distinct JSON payload once, keyed by the sha256 of its bytes,
zlib-compressed. ``archive_items`` says which session removed which item (a tool call with its
result, a thinking block, a server-tool pair), with a preview for listings. New steps are
appended, never edited.
"""

from __future__ import annotations

from ipse.store._migrations import MigrationStep, register

COMPONENT = "archive"

STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(
        number=1,
        name="archive blobs and items",
        sqlite=(
            "CREATE TABLE archive_blobs ("
            " sha256 TEXT PRIMARY KEY, codec TEXT NOT NULL, size INTEGER NOT NULL,"
            " data BLOB NOT NULL)",
            "CREATE TABLE archive_items ("
            " session TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL,"
            " tool TEXT NOT NULL, preview TEXT NOT NULL, size INTEGER NOT NULL,"
            " call_sha256 TEXT NOT NULL REFERENCES archive_blobs (sha256),"
            " result_sha256 TEXT REFERENCES archive_blobs (sha256),"
            " position INTEGER NOT NULL, source TEXT NOT NULL,"
            " created_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0),"
            " PRIMARY KEY (session, item_id))",
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
        postgres=(
            "CREATE TABLE archive_blobs ("
            " sha256 TEXT PRIMARY KEY, codec TEXT NOT NULL, size BIGINT NOT NULL,"
            " data BYTEA NOT NULL)",
            "CREATE TABLE archive_items ("
            " session TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL,"
            " tool TEXT NOT NULL, preview TEXT NOT NULL, size BIGINT NOT NULL,"
            " call_sha256 TEXT NOT NULL REFERENCES archive_blobs (sha256),"
            " result_sha256 TEXT REFERENCES archive_blobs (sha256),"
            " position INTEGER NOT NULL, source TEXT NOT NULL,"
            " created_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
            " PRIMARY KEY (session, item_id))",
            "CREATE INDEX archive_items_id ON archive_items (item_id)",
        ),
    ),
)


def ensure_registered() -> None:
    """Register the archive's steps (idempotent); called when an archive is opened."""
    register(COMPONENT, STEPS)


__all__ = ["COMPONENT", "STEPS", "ensure_registered"]
