"""Opening the archive by URL, at once (`open_archive`) or on the first write (`LazyArchive`).

Opening migrates the database (the store's registry applies every pending step), picks the
search index (`ipse.archive._index`: FTS5 on SQLite where this Python has it, else a scan that
warns; ``tsvector`` on PostgreSQL), and indexes the items not indexed yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ipse._redact import redact
from ipse.archive._base import Archivable, ArchiveStore
from ipse.archive._schema import ensure_registered
from ipse.errors import InputError

if TYPE_CHECKING:
    from ipse.archive._drivers import SqliteDriver
    from ipse.archive._index import SearchIndex


def open_archive(url: str | None = None, *, create: bool = True) -> ArchiveStore:
    """Open (and migrate) the archive at ``url``; None means the default store URL.

    ``create=False`` (commands that only read) opens only a store that already holds ipse's
    data: a missing database is an `InputError`, and nothing is created."""
    from ipse.archive._drivers import PostgresDriver, SqliteDriver
    from ipse.archive._index import TsvectorIndex
    from ipse.archive._sql import SqlArchive
    from ipse.store import open_backend
    from ipse.store._shared import default_url, sqlite_path

    url = url or default_url(create=create)
    if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
        raise InputError(
            f"store URL {redact(url)!r}: the archive needs sqlite:///PATH or postgresql://..."
        )
    ensure_registered()
    # applies every pending migration step, the archive's included
    open_backend(url, create=create).close()
    if url.startswith("sqlite:"):
        driver = SqliteDriver(sqlite_path(url))
        archive = SqlArchive(driver, _sqlite_index(driver))
    else:
        archive = SqlArchive(PostgresDriver(url), TsvectorIndex())
    try:
        archive.index_pending()
    except BaseException:
        archive.close()
        raise
    return archive


def _sqlite_index(driver: SqliteDriver) -> SearchIndex:
    """FTS5 where this Python's SQLite has it (its table made on first use, every item then
    indexed anew), else a scan, which warns."""
    from ipse.archive._index import Fts5Index, ScanIndex, fts5_available

    if not fts5_available():
        return ScanIndex()
    made = "SELECT 1 FROM sqlite_master WHERE name = 'archive_fts'"
    if not driver.query(made, ()):
        with driver.tx() as cur:
            cur.execute(made)
            if not cur.fetchall():
                cur.execute(Fts5Index.CREATE)
                cur.execute("UPDATE archive_items SET indexed = 0 WHERE indexed = 1")
    return Fts5Index()


class LazyArchive:
    """An archive opened on the first `put` (so a run that archives nothing creates no database).

    Only ``put`` and ``close`` are offered: it is what a handoff run needs. ``project``: the
    project the sessions it archives ran in (`ipse.archive.project_key`), filed with each."""

    def __init__(self, url: str | None = None, *, project: str | None = None) -> None:
        self._url = url
        self._project = project
        self._store: ArchiveStore | None = None

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int:
        if self._store is None:
            self._store = open_archive(self._url)
        added = self._store.put(session, removed, source)
        if self._project is not None and removed:
            self._store.add_project(session, self._project)
        return added

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


__all__ = ["LazyArchive", "open_archive"]
