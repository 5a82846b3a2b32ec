"""The SQLite backend (the default): one file, WAL mode, every write in ``BEGIN IMMEDIATE``.

``BEGIN IMMEDIATE`` takes SQLite's single writer lock at the start of the transaction, so the
lease check and the snapshot insert happen atomically with respect to every other process
using the same file. Lease times come from SQLite's own clock. sqlite3 errors are translated
into `StoreError` here.

Waits are bounded. A writer waits for SQLite's lock at most about as long as the lease it
asks for (or the lease it holds) is valid, at most `MAX_WAIT` seconds, and then gets
`WriterConflict`: a holder frozen inside its transaction never blocks the others for longer.
Opening the store reads the schema version with a plain query and takes the writer lock only
when a migration is due, so readers never wait for a writer. Writes run with
``synchronous = FULL``: an acknowledged snapshot survives an OS crash or power loss, not only
a killed process.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import StaleWriter, StoreError, WriterConflict
from ipse.store._base import (
    Lease,
    SnapshotRecord,
    check_ttl,
    check_twin_id,
    record_from_row,
)
from ipse.store._connections import SqliteConnection
from ipse.store._migrations import MIGRATIONS_TABLE_SQLITE, plan, registered

_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
_COLUMNS = "twin_id, version, state_hash, schema, body, created_at, writer, token, notes"
MAX_WAIT = 30.0  # seconds a writer waits for SQLite's lock, at most
MIN_WAIT = 1.0


def _bounded(seconds: float) -> float:
    return min(MAX_WAIT, max(MIN_WAIT, seconds))


def _is_busy(exc: BaseException | None) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _remaining(lease: Lease) -> float:
    """How long a lease holder may wait for the lock: until its lease runs out (same clock:
    SQLite's ``julianday('now')`` is this machine's time)."""
    return lease.expires_at - time.time()


class SqliteBackend:
    """Leases and snapshot history in one SQLite file."""

    def __init__(self, path: str | Path, *, upto: Mapping[str, int] | None = None) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._db = SqliteConnection(self.path)
        try:
            self._db.raw.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite {self.path}: {exc}") from exc
        if self._pending(upto):
            self.migrate(upto)

    @contextlib.contextmanager
    def _immediate(self, wait: float = MAX_WAIT) -> Iterator[sqlite3.Cursor]:
        """One write transaction holding SQLite's writer lock, waited for at most ``wait``
        seconds (then `WriterConflict`)."""
        wait = _bounded(wait)
        try:
            self._db.raw.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite {self.path}: {exc}") from exc
        try:
            with self._db.write() as cur:
                yield cur
        except WriterConflict:
            raise
        except StoreError as exc:
            if _is_busy(exc.__cause__):
                raise WriterConflict(
                    f"SQLite {self.path} is held by another writer for more than {wait:.1f} s "
                    "(a writer frozen inside its transaction?); try again"
                ) from exc
            raise

    def _pending(self, upto: Mapping[str, int] | None) -> bool:
        """Whether a migration step is due, read without the writer lock."""
        try:
            rows = self._read("SELECT component, step, name FROM ipse_migrations", ())
        except StoreError:
            return True  # no migrations table yet: a fresh file
        applied = {(str(c), int(n)): str(name) for c, n, name in rows}
        due = [
            step
            for component, step in plan(applied, registered())
            if upto is None or step.number <= upto.get(component, 0)
        ]
        return bool(due)

    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def migrate(self, upto: Mapping[str, int] | None = None) -> list[str]:
        """Apply pending migration steps (only up to ``upto[component]`` when given)."""
        applied_names: list[str] = []
        with self._immediate() as conn:
            conn.execute(MIGRATIONS_TABLE_SQLITE)
            applied = {
                (c, int(n)): str(name)
                for c, n, name in conn.execute("SELECT component, step, name FROM ipse_migrations")
            }
            for component, step in plan(applied, registered()):
                if upto is not None and step.number > upto.get(component, 0):
                    continue
                for statement in step.sqlite:
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO ipse_migrations (component, step, name, applied_at)"
                    f" VALUES (?, ?, ?, {_NOW})",
                    (component, step.number, step.name),
                )
                applied_names.append(f"{component}#{step.number} {step.name}")
        return applied_names

    def applied_migrations(self) -> list[tuple[str, int, str]]:
        """The recorded migration steps, in order."""
        rows = self._read(
            "SELECT component, step, name FROM ipse_migrations ORDER BY component, step", ()
        )
        return [(str(c), int(n), str(name)) for c, n, name in rows]

    def acquire(self, twin_id: str, holder: str, ttl: float) -> Lease:
        check_twin_id(twin_id)
        ttl = check_ttl(ttl)
        with self._immediate(ttl) as conn:
            now = float(conn.execute(f"SELECT {_NOW}").fetchone()[0])
            token = self._take(conn, twin_id, holder, now, now + ttl)
        return Lease(twin_id, holder, token, now + ttl)

    def _take(
        self, conn: sqlite3.Cursor, twin_id: str, holder: str, now: float, until: float
    ) -> int:
        """Give ``holder`` the twin's next lease, lasting ``until``, and return its token;
        `WriterConflict` while another holder's lease lasts. Inside a write transaction."""
        row = conn.execute(
            "SELECT holder, token, expires_at FROM twin_leases WHERE twin_id = ?", (twin_id,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO twin_leases (twin_id, holder, token, expires_at) VALUES (?, ?, 1, ?)",
                (twin_id, holder, until),
            )
            return 1
        current_holder, current_token, expires_at = row
        if float(expires_at) > now and current_holder != holder:
            raise WriterConflict(
                f"twin {twin_id!r} is being written by {current_holder!r} "
                f"(lease token {current_token})"
            )
        conn.execute(
            "UPDATE twin_leases SET holder = ?, token = ?, expires_at = ? WHERE twin_id = ?",
            (holder, int(current_token) + 1, until, twin_id),
        )
        return int(current_token) + 1

    def _check_current(self, conn: sqlite3.Cursor, lease: Lease) -> float:
        row = conn.execute(
            f"SELECT holder, token, expires_at, {_NOW} FROM twin_leases WHERE twin_id = ?",
            (lease.twin_id,),
        ).fetchone()
        if row is None or int(row[1]) != lease.token or row[0] != lease.holder:
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} was taken over; "
                "nothing was written"
            )
        if float(row[2]) <= float(row[3]):
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} expired; nothing was written"
            )
        return float(row[3])

    def renew(self, lease: Lease, ttl: float) -> Lease:
        ttl = check_ttl(ttl)
        with self._immediate(_remaining(lease)) as conn:
            now = self._check_current(conn, lease)
            conn.execute(
                "UPDATE twin_leases SET expires_at = ? WHERE twin_id = ?",
                (now + ttl, lease.twin_id),
            )
        return Lease(lease.twin_id, lease.holder, lease.token, now + ttl)

    def release(self, lease: Lease) -> None:
        with self._immediate(_remaining(lease)) as conn:
            conn.execute(
                "UPDATE twin_leases SET expires_at = 0 WHERE twin_id = ? AND token = ?",
                (lease.twin_id, lease.token),
            )

    def append(
        self,
        lease: Lease,
        *,
        body: Mapping[str, Any],
        state_hash: str,
        schema: int,
        notes: Sequence[Mapping[str, Any]] = (),
    ) -> SnapshotRecord:
        body_text = jsonio.dumps(dict(body)).decode("utf-8")
        notes_text = jsonio.dumps([dict(n) for n in notes]).decode("utf-8")
        with self._immediate(_remaining(lease)) as conn:
            row = conn.execute(
                f"INSERT INTO twin_snapshots ({_COLUMNS})"
                " SELECT l.twin_id, COALESCE((SELECT MAX(version) FROM twin_snapshots s"
                f"   WHERE s.twin_id = l.twin_id), 0) + 1, ?, ?, ?, {_NOW}, l.holder, l.token, ?"
                " FROM twin_leases l WHERE l.twin_id = ? AND l.token = ? AND l.holder = ?"
                f"   AND l.expires_at > {_NOW}"
                " RETURNING version, created_at",
                (
                    state_hash,
                    schema,
                    body_text,
                    notes_text,
                    lease.twin_id,
                    lease.token,
                    lease.holder,
                ),
            ).fetchone()
            if row is None:
                self._check_current(conn, lease)  # raises, saying why
                raise StaleWriter(f"lease token {lease.token} is no longer current")
        return SnapshotRecord(
            twin_id=lease.twin_id,
            version=int(row[0]),
            state_hash=state_hash,
            schema=schema,
            body=jsonio.loads(body_text),
            created_at=float(row[1]),
            writer=lease.holder,
            token=lease.token,
            notes=tuple(jsonio.loads(notes_text)),
        )

    def append_after(
        self,
        twin_id: str,
        holder: str,
        *,
        after: int,
        body: Mapping[str, Any],
        state_hash: str,
        schema: int,
        notes: Sequence[Mapping[str, Any]] = (),
        ttl: float = 30.0,
    ) -> SnapshotRecord | None:
        check_twin_id(twin_id)
        ttl = check_ttl(ttl)
        body_text = jsonio.dumps(dict(body)).decode("utf-8")
        notes_text = jsonio.dumps([dict(n) for n in notes]).decode("utf-8")
        with self._immediate(ttl) as conn:
            now = float(conn.execute(f"SELECT {_NOW}").fetchone()[0])
            token = self._take(conn, twin_id, holder, now, 0.0)  # given up at commit
            newest = conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM twin_snapshots WHERE twin_id = ?",
                (twin_id,),
            ).fetchone()[0]
            if int(newest) != after:
                return None
            conn.execute(
                f"INSERT INTO twin_snapshots ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (twin_id, after + 1, state_hash, schema, body_text, now, holder, token, notes_text),
            )
        return SnapshotRecord(
            twin_id=twin_id,
            version=after + 1,
            state_hash=state_hash,
            schema=schema,
            body=jsonio.loads(body_text),
            created_at=now,
            writer=holder,
            token=token,
            notes=tuple(jsonio.loads(notes_text)),
        )

    def latest(self, twin_id: str, newer_than: int = 0) -> SnapshotRecord | None:
        rows = self._read(
            f"SELECT {_COLUMNS} FROM twin_snapshots WHERE twin_id = ? AND version > ?"
            " ORDER BY version DESC LIMIT 1",
            (twin_id, newer_than),
        )
        return record_from_row(rows[0]) if rows else None

    def latest_version(self, twin_id: str) -> int | None:
        rows = self._read("SELECT MAX(version) FROM twin_snapshots WHERE twin_id = ?", (twin_id,))
        return None if rows[0][0] is None else int(rows[0][0])

    def history(self, twin_id: str) -> list[SnapshotRecord]:
        rows = self._read(
            f"SELECT {_COLUMNS} FROM twin_snapshots WHERE twin_id = ? ORDER BY version",
            (twin_id,),
        )
        return [record_from_row(r) for r in rows]

    def twins(self) -> list[str]:
        rows = self._read("SELECT DISTINCT twin_id FROM twin_snapshots ORDER BY twin_id", ())
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        self._db.close()
