"""Opening a store by URL: the scheme picks the backend, which is imported only when opened.

A command that only reads opens with ``create=False``: it never creates a folder, a database
file or a table. A SQLite file that does not exist (a typo in ``--store``, an ``IPSE_HOME`` that
points at nothing) or a database without ipse's tables is a `NoStore` error saying so, where a
writing command would have made a fresh, empty store and reported nothing found in it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ipse._redact import redact
from ipse.errors import InputError, NoStore
from ipse.store._base import SnapshotBackend
from ipse.store._tables import ensure_registered


def default_url(*, create: bool = True) -> str:
    """``IPSE_DATABASE_URL`` when set, else the SQLite file in the ipse home folder (the
    folder is created unless ``create`` is off)."""
    env = os.environ.get("IPSE_DATABASE_URL")
    if env:
        return env
    from ipse.home import default_db_path

    return sqlite_url(default_db_path(create=create))


def sqlite_url(path: Path) -> str:
    """The URL of a SQLite file: ``sqlite:///`` then the path (absolute paths get four slashes)."""
    return f"sqlite:///{path}"


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:`` URL: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db``
    absolute (``sqlite:rel.db`` and ``sqlite://rel.db`` are read as relative too)."""
    rest = url[len("sqlite:") :]
    if rest.startswith("///"):
        path = rest[3:]
    elif rest.startswith("//"):
        path = rest[2:]
    else:
        path = rest
    if not path.strip("/"):
        raise InputError(f"store URL {redact(url)!r}: no database path (use sqlite:///PATH)")
    return Path(path)


def open_backend(
    url: str | None = None, *, upto: Mapping[str, int] | None = None, create: bool = True
) -> SnapshotBackend:
    """Open (and migrate) the backend named by ``url``; None means `default_url`.

    ``upto`` stops migrations at a given step per component (for testing upgrades).
    ``create=False`` opens only a store that already holds ipse's data (`require_data`).
    """
    url = url or default_url(create=create)
    if not create:
        require_data(url)
    if url in ("memory://", "memory:"):
        from ipse.store._memory import MemoryBackend

        return MemoryBackend()
    ensure_registered()  # the snapshot tables the SQL backends query
    if url.startswith("sqlite:"):
        from ipse.store._sqlite import SqliteBackend

        return SqliteBackend(sqlite_path(url), upto=upto)
    if url.startswith(("postgresql://", "postgres://")):
        from ipse.store._postgres import PostgresBackend

        return PostgresBackend(url, upto=upto)
    raise InputError(
        f"store URL {redact(url)!r}: unknown scheme (use memory://, sqlite:///PATH or postgresql://...)"
    )


_NOT_CREATED = "commands that only read never create one"


def require_data(url: str) -> None:
    """Raise `NoStore` unless the store at ``url`` exists and holds ipse's tables; nothing
    is created, written or migrated (``memory://`` always passes: it is empty by design)."""
    if url.startswith("sqlite:"):
        path = sqlite_path(url)
        if not path.exists():
            raise NoStore(f"no such database ({_NOT_CREATED})", path=path)
        if not path.is_file():
            raise NoStore("not a database file", path=path)
        if _sqlite_tables(path) is False:
            raise NoStore(f"holds no ipse data ({_NOT_CREATED})", path=path)
    elif url.startswith(("postgresql://", "postgres://")) and not _postgres_tables(url):
        raise NoStore(
            f"store URL {redact(url)!r}: no ipse data in that database (no ipse_migrations "
            f"table; {_NOT_CREATED})"
        )


def _sqlite_tables(path: Path) -> bool | None:
    """Whether a SQLite file has ipse's migrations table, read without writing; None when a
    read-only look is not possible (the normal open then says why)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return None
    try:
        rows = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ipse_migrations'"
        ).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return bool(rows)


def _postgres_tables(url: str) -> bool:
    """Whether the PostgreSQL database at ``url`` has ipse's migrations table (on its search
    path), asked without creating anything."""
    from ipse.store._connections import PostgresConnection

    db = PostgresConnection(url)
    try:
        with db.transaction() as cur:
            cur.execute("SELECT to_regclass('ipse_migrations') IS NOT NULL")
            row = cur.fetchone()
    finally:
        db.close()
    return bool(row and row[0])


__all__ = ["default_url", "open_backend", "require_data", "sqlite_path", "sqlite_url"]
