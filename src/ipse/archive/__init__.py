"""The archive of what a handoff removed: every tool call with its result, every thinking block.

Items are keyed by session and id (the call id; thinking blocks by a content hash), stored once
per distinct payload (content-addressed by sha256, zlib-compressed), and given back byte for
byte. `open_archive` opens it on the same database as the other stores: SQLite in IPSE_HOME by
default, PostgreSQL with ``IPSE_DATABASE_URL`` or an explicit ``postgresql://`` URL.
"""

from __future__ import annotations

from ipse.archive._base import Archivable, ArchiveSink, ArchiveStore, Item, Recalled, preview
from ipse.archive._blobs import address, payload
from ipse.archive._open import LazyArchive, open_archive
from ipse.archive._schema import COMPONENT, STEPS

__all__ = [
    "COMPONENT",
    "STEPS",
    "Archivable",
    "ArchiveSink",
    "ArchiveStore",
    "Item",
    "LazyArchive",
    "Recalled",
    "address",
    "open_archive",
    "payload",
    "preview",
]
