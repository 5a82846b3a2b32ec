"""Opening a store by URL: the scheme picks the backend, which is imported only when opened."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ipse.errors import InputError
from ipse.redact import redact
from ipse.store._base import SnapshotBackend


def default_url() -> str:
    """``IPSE_DATABASE_URL`` when set, else the SQLite file in the ipse home folder."""
    env = os.environ.get("IPSE_DATABASE_URL")
    if env:
        return env
    from ipse.home import default_db_path

    return sqlite_url(default_db_path())


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
    url: str | None = None, *, upto: Mapping[str, int] | None = None
) -> SnapshotBackend:
    """Open (and migrate) the backend named by ``url``; None means `default_url`.

    ``upto`` stops migrations at a given step per component (for testing upgrades).
    """
    url = url or default_url()
    if url in ("memory://", "memory:"):
        from ipse.store._memory import MemoryBackend

        return MemoryBackend()
    if url.startswith("sqlite:"):
        from ipse.store._sqlite import SqliteBackend

        return SqliteBackend(sqlite_path(url), upto=upto)
    if url.startswith(("postgresql://", "postgres://")):
        from ipse.store._postgres import PostgresBackend

        return PostgresBackend(url, upto=upto)
    raise InputError(
        f"store URL {redact(url)!r}: unknown scheme (use memory://, sqlite:///PATH or postgresql://...)"
    )


__all__ = ["default_url", "open_backend", "sqlite_path", "sqlite_url"]
