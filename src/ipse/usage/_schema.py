"""The usage index's tables, as migration steps of the shared registry (component ``usage``).

``usage_files`` has one row per session file read: its path, the reader that reads it, the
size, modification time and inode it had when read, the offset after the last complete line
read and the bytes just before it (an append is read from there, once those bytes are still
the same), the reader's state (what an append needs: the rollout's model, the sub-agent's last
record), its calls (msgpack: a row per call) and the cache losses the prefix replay found in
it (and at which size it was replayed). ``usage_ledger`` keeps the last ledger with the
fingerprint of the files it was made from: a run that finds the same files reads nothing else.
New steps are appended, never edited.
"""

from __future__ import annotations

from ipse.store import MigrationStep, register

COMPONENT = "usage"

STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(
        number=1,
        name="usage files and ledger",
        sqlite=(
            "CREATE TABLE usage_files ("
            " path TEXT PRIMARY KEY, reader TEXT NOT NULL, size INTEGER NOT NULL,"
            " mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, read_to INTEGER NOT NULL,"
            " tail BLOB NOT NULL, state TEXT NOT NULL, calls BLOB NOT NULL,"
            " losses TEXT, replayed_size INTEGER)",
            "CREATE TABLE usage_ledger ("
            " name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, body BLOB NOT NULL)",
        ),
        postgres=(
            "CREATE TABLE usage_files ("
            " path TEXT PRIMARY KEY, reader TEXT NOT NULL, size BIGINT NOT NULL,"
            " mtime_ns BIGINT NOT NULL, inode BIGINT NOT NULL, read_to BIGINT NOT NULL,"
            " tail BYTEA NOT NULL, state TEXT NOT NULL, calls BYTEA NOT NULL,"
            " losses TEXT, replayed_size BIGINT)",
            "CREATE TABLE usage_ledger ("
            " name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, body BYTEA NOT NULL)",
        ),
    ),
)


def ensure_registered() -> None:
    """Register the usage index's steps (idempotent); called when the index is opened."""
    register(COMPONENT, STEPS)


__all__ = ["COMPONENT", "STEPS", "ensure_registered"]
