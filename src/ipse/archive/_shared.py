"""What `ipse.archive` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.archive.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.archive._base import Archivable, ArchiveSink, ArchiveStore, Item
from ipse.archive._blobs import payload
from ipse.archive._lookup import list_sessions
from ipse.archive._open import LazyArchive
from ipse.archive._scope import cli_caller, project_key

__all__ = [
    "Archivable",
    "ArchiveSink",
    "ArchiveStore",
    "Item",
    "LazyArchive",
    "cli_caller",
    "list_sessions",
    "payload",
    "project_key",
]
