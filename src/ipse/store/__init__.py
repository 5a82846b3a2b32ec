"""Durable records: the storage protocol, its backends, and the shared migration runner.

`open_backend` picks a backend from a URL: ``memory://``; ``sqlite:///RELATIVE/PATH`` (three
slashes: relative to the current folder) or ``sqlite:////ABSOLUTE/PATH`` (four), the usual
convention (the default is ``ipse.db`` in IPSE_HOME); ``postgresql://...``
(extra ``ipse[postgres]``; also taken from ``IPSE_DATABASE_URL``). Backends are imported only
when opened. `open_conversations` opens the per-conversation state a proxy keeps (anchors and
counters) on the same database.
"""

from __future__ import annotations

from ipse.store._base import SnapshotBackend
from ipse.store._conversations import ConversationStore, open_conversations
from ipse.store._migrations import MigrationStep, register
from ipse.store._open import open_backend

__all__ = [
    "ConversationStore",
    "MigrationStep",
    "SnapshotBackend",
    "open_backend",
    "open_conversations",
    "register",
]
