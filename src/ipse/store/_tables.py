"""The snapshot backends' tables: leases (one writer per twin) and snapshot history.

The SQL backends (`_sqlite`, `_postgres`) query these tables, so their steps live here and
`open_backend` registers them before it opens one (`ensure_registered`); they are recorded under
the component name ``twin``, as released.

Step 1 is the first schema: leases and an append-only snapshot table. Step 2 adds the
``notes`` column (why facts left a snapshot, e.g. relevance decay). New steps are appended,
never edited, once released. Bodies are stored as JSON text, byte for byte as written
(PostgreSQL's JSONB would normalise them, and costs more to write).
"""

from __future__ import annotations

from ipse.store._migrations import MigrationStep, register

COMPONENT = "twin"

STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(
        number=1,
        name="twin leases and snapshots",
        sqlite=(
            "CREATE TABLE twin_leases ("
            " twin_id TEXT PRIMARY KEY, holder TEXT NOT NULL,"
            " token INTEGER NOT NULL CHECK (token > 0), expires_at REAL NOT NULL)",
            "CREATE TABLE twin_snapshots ("
            " twin_id TEXT NOT NULL, version INTEGER NOT NULL CHECK (version > 0),"
            " state_hash TEXT NOT NULL, schema INTEGER NOT NULL, body TEXT NOT NULL,"
            " created_at REAL NOT NULL, writer TEXT NOT NULL, token INTEGER NOT NULL,"
            " PRIMARY KEY (twin_id, version))",
        ),
        postgres=(
            "CREATE TABLE twin_leases ("
            " twin_id TEXT PRIMARY KEY, holder TEXT NOT NULL,"
            " token BIGINT NOT NULL CHECK (token > 0), expires_at TIMESTAMPTZ NOT NULL)",
            "CREATE TABLE twin_snapshots ("
            " twin_id TEXT NOT NULL, version INTEGER NOT NULL CHECK (version > 0),"
            " state_hash TEXT NOT NULL, schema INTEGER NOT NULL, body TEXT NOT NULL,"
            " created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),"
            " writer TEXT NOT NULL, token BIGINT NOT NULL,"
            " PRIMARY KEY (twin_id, version))",
            # keep snapshots of up to ~8 KB inline and uncompressed: cheaper to write and read
            "ALTER TABLE twin_snapshots SET (toast_tuple_target = 8160)",
        ),
    ),
    MigrationStep(
        number=2,
        name="snapshot notes",
        sqlite=("ALTER TABLE twin_snapshots ADD COLUMN notes TEXT NOT NULL DEFAULT '[]'",),
        postgres=("ALTER TABLE twin_snapshots ADD COLUMN notes TEXT NOT NULL DEFAULT '[]'",),
    ),
)


def ensure_registered() -> None:
    """Register the snapshot tables' steps (idempotent); called when a backend is opened."""
    register(COMPONENT, STEPS)
