"""The archive of what a handoff removed: every tool call with its result, every thinking block.

Items are keyed by session and id (the call id; thinking blocks by a content hash), stored once
per distinct payload (content-addressed by sha256, zlib-compressed), and given back byte for
byte. `open_archive` opens it on the same database as the other stores: SQLite in IPSE_HOME by
default, PostgreSQL with ``IPSE_DATABASE_URL`` or an explicit ``postgresql://`` URL.
"""

from __future__ import annotations

from collections.abc import Sequence

from ipse.archive._base import ArchiveSink, ArchiveStore, Item, Recalled, Removed, preview
from ipse.archive._blobs import address, payload
from ipse.archive._schema import COMPONENT, STEPS, ensure_registered
from ipse.errors import InputError
from ipse.redact import redact


def open_archive(url: str | None = None) -> ArchiveStore:
    """Open (and migrate) the archive at ``url``; None means the default store URL."""
    from ipse.archive._sql import PostgresDriver, SqlArchive, SqliteDriver
    from ipse.store import default_url, open_backend, sqlite_path

    url = url or default_url()
    if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
        raise InputError(
            f"store URL {redact(url)!r}: the archive needs sqlite:///PATH or postgresql://..."
        )
    ensure_registered()
    open_backend(url).close()  # applies every pending migration step, the archive's included
    if url.startswith("sqlite:"):
        return SqlArchive(SqliteDriver(sqlite_path(url)))
    return SqlArchive(PostgresDriver(url))


class LazyArchive:
    """An archive opened on the first `put` (so a run that archives nothing creates no database).

    Only ``put`` and ``close`` are offered: it is what a handoff run needs."""

    def __init__(self, url: str | None = None) -> None:
        self._url = url
        self._store: ArchiveStore | None = None

    def put(self, session: str, removed: Sequence[Removed], source: str) -> int:
        if self._store is None:
            self._store = open_archive(self._url)
        return self._store.put(session, removed, source)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


__all__ = [
    "COMPONENT",
    "STEPS",
    "ArchiveSink",
    "ArchiveStore",
    "Item",
    "LazyArchive",
    "Recalled",
    "Removed",
    "address",
    "open_archive",
    "payload",
    "preview",
]
