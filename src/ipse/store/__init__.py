"""Durable records: the storage protocol, its backends, and the shared migration runner.

`open_backend` picks a backend from a URL: ``memory://``; ``sqlite:///RELATIVE/PATH`` (three
slashes: relative to the current folder) or ``sqlite:////ABSOLUTE/PATH`` (four), the usual
convention (the default is ``ipse.db`` in IPSE_HOME); ``postgresql://...``
(extra ``ipse[postgres]``; also taken from ``IPSE_DATABASE_URL``). Backends are imported only
when opened. `open_conversations` opens the per-conversation state a proxy keeps (anchors and
counters) on the same database.
"""

from __future__ import annotations

from ipse.store._base import Lease, SnapshotBackend, SnapshotRecord
from ipse.store._connections import PostgresConnection, SqliteConnection
from ipse.store._conversations import (
    ConversationState,
    ConversationStore,
    MemoryConversations,
    SqlConversations,
    open_conversations,
    request_digest,
)
from ipse.store._migrations import MigrationStep, register
from ipse.store._open import default_url, open_backend, sqlite_path, sqlite_url

__all__ = [
    "ConversationState",
    "ConversationStore",
    "Lease",
    "MemoryConversations",
    "MigrationStep",
    "PostgresConnection",
    "SnapshotBackend",
    "SnapshotRecord",
    "SqlConversations",
    "SqliteConnection",
    "default_url",
    "open_backend",
    "open_conversations",
    "register",
    "request_digest",
    "sqlite_path",
    "sqlite_url",
]
