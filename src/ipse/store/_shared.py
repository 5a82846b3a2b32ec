"""What `ipse.store` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.store.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.store._base import Lease, SnapshotRecord
from ipse.store._connections import PostgresConnection, SqliteConnection
from ipse.store._conversations import request_digest
from ipse.store._open import default_url, sqlite_path

__all__ = [
    "Lease",
    "PostgresConnection",
    "SnapshotRecord",
    "SqliteConnection",
    "default_url",
    "request_digest",
    "sqlite_path",
]
