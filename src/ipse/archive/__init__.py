"""The archive of what a handoff removed: every tool call with its result, every thinking block.

Items are keyed by session and id (the call id; thinking blocks by a content hash), stored once
per distinct payload (content-addressed by sha256, zlib-compressed), and given back byte for
byte. `open_archive` opens it on the same database as the other stores: SQLite in IPSE_HOME by
default, PostgreSQL with ``IPSE_DATABASE_URL`` or an explicit ``postgresql://`` URL.
"""

from __future__ import annotations

from pathlib import Path

from ipse.archive.base import ArchiveStore, Item, Recalled, Removed, preview
from ipse.archive.blobs import address, payload
from ipse.archive.schema import COMPONENT, STEPS, ensure_registered
from ipse.errors import InputError


def open_archive(url: str | None = None) -> ArchiveStore:
    """Open (and migrate) the archive at ``url``; None means the default store URL."""
    from ipse.archive.sql import PostgresDriver, SqlArchive, SqliteDriver
    from ipse.store import default_url, open_backend

    url = url or default_url()
    if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
        raise InputError(f"store URL {url!r}: the archive needs sqlite:///PATH or postgresql://...")
    ensure_registered()
    open_backend(url).close()  # applies every pending migration step, the archive's included
    if url.startswith("sqlite:"):
        rest = url[len("sqlite:") :]
        return SqlArchive(SqliteDriver(Path(rest[2:] if rest.startswith("//") else rest)))
    return SqlArchive(PostgresDriver(url))


__all__ = [
    "COMPONENT",
    "STEPS",
    "ArchiveStore",
    "Item",
    "Recalled",
    "Removed",
    "address",
    "open_archive",
    "payload",
    "preview",
]
