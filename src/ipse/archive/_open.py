"""Opening the archive by URL, at once (`open_archive`) or on the first write (`LazyArchive`)."""

from __future__ import annotations

from collections.abc import Sequence

from ipse.archive._base import Archivable, ArchiveStore
from ipse.archive._schema import ensure_registered
from ipse.errors import InputError
from ipse.redact import redact


def open_archive(url: str | None = None, *, create: bool = True) -> ArchiveStore:
    """Open (and migrate) the archive at ``url``; None means the default store URL.

    ``create=False`` (commands that only read) opens only a store that already holds ipse's
    data: a missing database is an `InputError`, and nothing is created."""
    from ipse.archive._sql import PostgresDriver, SqlArchive, SqliteDriver
    from ipse.store import default_url, open_backend, sqlite_path

    url = url or default_url(create=create)
    if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
        raise InputError(
            f"store URL {redact(url)!r}: the archive needs sqlite:///PATH or postgresql://..."
        )
    ensure_registered()
    # applies every pending migration step, the archive's included
    open_backend(url, create=create).close()
    if url.startswith("sqlite:"):
        return SqlArchive(SqliteDriver(sqlite_path(url)))
    return SqlArchive(PostgresDriver(url))


class LazyArchive:
    """An archive opened on the first `put` (so a run that archives nothing creates no database).

    Only ``put`` and ``close`` are offered: it is what a handoff run needs."""

    def __init__(self, url: str | None = None) -> None:
        self._url = url
        self._store: ArchiveStore | None = None

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int:
        if self._store is None:
            self._store = open_archive(self._url)
        return self._store.put(session, removed, source)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


__all__ = ["LazyArchive", "open_archive"]
