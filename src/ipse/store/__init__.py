"""Durable records: the storage protocol, its backends, and the shared migration runner.

`open_backend` picks a backend from a URL: ``memory://``; ``sqlite:///ABSOLUTE/PATH`` or
``sqlite://RELATIVE/PATH`` (the default is ``ipse.db`` in IPSE_HOME); ``postgresql://...``
(extra ``ipse[postgres]``; also taken from ``IPSE_DATABASE_URL``). Backends are imported only
when opened.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ipse.errors import InputError
from ipse.store._base import Lease, SnapshotBackend, SnapshotRecord
from ipse.store._migrations import Step, register


def default_url() -> str:
    """``IPSE_DATABASE_URL`` when set, else the SQLite file in the ipse home folder."""
    env = os.environ.get("IPSE_DATABASE_URL")
    if env:
        return env
    from ipse.home import default_db_path

    return f"sqlite://{default_db_path()}"


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

        rest = url[len("sqlite:") :]
        path = rest[2:] if rest.startswith("//") else rest
        if path.startswith("/"):
            path = "/" + path.lstrip("/")
        if not path or path == "/":
            raise InputError(f"store URL {url!r}: no database path (use sqlite:///PATH)")
        return SqliteBackend(Path(path), upto=upto)
    if url.startswith(("postgresql://", "postgres://")):
        from ipse.store._postgres import PostgresBackend

        return PostgresBackend(url, upto=upto)
    raise InputError(
        f"store URL {url!r}: unknown scheme (use memory://, sqlite:///PATH or postgresql://...)"
    )


__all__ = [
    "Lease",
    "SnapshotBackend",
    "SnapshotRecord",
    "Step",
    "default_url",
    "open_backend",
    "register",
]
