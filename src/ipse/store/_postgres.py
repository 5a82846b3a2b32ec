"""The PostgreSQL backend: the same tables shared by many processes on many machines.

One writer per twin is enforced inside the database. ``acquire`` is one atomic
``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` that only takes the lease row when it is free
or expired and always increments the fencing token. ``append`` is one
``INSERT ... SELECT ... FROM twin_leases ... FOR UPDATE OF l``: it locks the lease row and
only produces a snapshot row when the caller's token, holder and expiry still match on the
server, so a taken-over writer can never add to the history, whatever its clock says.
Times come from the server's clock. psycopg is imported lazily (extra ``ipse[postgres]``) and
its errors are translated into `StoreError` here. Connections come from the process's pool
(`ipse.store._connections`), one per operation.

Waits are bounded: every lease statement runs after a local ``lock_timeout`` and
``statement_timeout`` of about the lease's time to live (at most `MAX_WAIT` seconds), so a
holder frozen while it holds the lease row's lock (say, inside `renew` after ``SELECT ... FOR
UPDATE``) makes the others wait that long and then get `WriterConflict`, never forever.

``append_after`` (a whole turn's write) is one statement too: it takes the lease as
``acquire`` does, inserts the next version only on top of the version the caller read, and
gives the lease up at commit, so a killed caller leaves no lease behind. Concurrent
``append_after`` calls of one backend share transactions (group commit, `ipse.store._group`):
as many are in flight as the pool has connections, and callers beyond that go together in the
next one, each acknowledged after its commit; the statements of a batch lock lease rows in
twin order, and a batch the server refuses as a whole is retried one transaction per call.

Round trips: ``acquire``, ``append``, ``append_after`` and ``release`` are one round trip each
(a batch of ``append_after`` calls, one for all). Every connection of the backend's pool is
made with the settings of a durable write that waits at most `MAX_WAIT` seconds for a lock
(``synchronous_commit = on``, ``lock_timeout``, ``statement_timeout``: session settings, so
they hold whatever the URL or the server's defaults say; a migration lifts the two bounds for
its own transaction). A statement that needs exactly those (``append_after`` with the default
time to live) is sent alone: prepared once per connection and run through libpq itself
(`_Direct`), so that psycopg's per-statement work stays out of a single write's latency.
Any other lease statement travels after its own timeouts (``set_config(..., true)``, the
function form of ``SET LOCAL``) in one pipeline (psycopg's pipeline mode) up to one Sync, which
PostgreSQL runs as one implicit transaction. The statement's own ``WHERE`` does the fencing
check, and psycopg prepares the other statements server-side after a few uses. Reads are
bounded by the same ``statement_timeout``. A read (``latest``, ``latest_version``) is one
statement, one round trip; ``latest(twin, newer_than)`` returns no row when the caller already
holds the newest version, and concurrent ``latest`` calls beyond the pool's connections go
together in one query.

Only a snapshot's commit waits for the WAL flush (a disk sync). ``acquire`` and ``release``
commit with ``synchronous_commit = off``: losing one to a server crash is harmless. A lost
release leaves the lease to expire. A lost acquire cannot fence wrongly: the holder's
``append`` commits durably, which flushes the WAL up to and including the acquire before it;
if the server crashed first, the lease row no longer names that holder and token, so the
append writes nothing (`StaleWriter`), and whoever takes the lease next gets a token and holder
of its own.
"""

from __future__ import annotations

import contextlib
import re
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ipse import jsonio
from ipse._redact import redact
from ipse.errors import ConnectionLost, StaleWriter, StoreError, WriterConflict
from ipse.store._base import (
    Lease,
    SnapshotRecord,
    check_ttl,
    check_twin_id,
    record_from_row,
)
from ipse.store._connections import PostgresConnection
from ipse.store._group import GroupCommit, Request
from ipse.store._migrations import MIGRATIONS_TABLE_POSTGRES, plan, registered

if TYPE_CHECKING:
    pass
_SET_WAITS = (
    "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true),"
    " set_config('synchronous_commit', %s, true)"
)

MAX_WAIT = 30.0  # seconds a writer waits for a lock, at most
MIN_WAIT = 1.0


def _waits(wait: float, flush: bool = True) -> tuple[str, str, str]:
    """``lock_timeout``, ``statement_timeout`` (ms) and ``synchronous_commit`` for a lease
    statement whose lock waits end after ``wait`` seconds (bounded to MIN_WAIT..MAX_WAIT)."""
    wait = min(MAX_WAIT, max(MIN_WAIT, wait))
    return f"{int(wait * 1000)}", f"{int((2 * wait + 5) * 1000)}", "on" if flush else "off"


# The settings of a durable write with the longest wait are every connection's own (set once
# when it is made), so such a statement travels alone, without a SET before it.
_SESSION_WAITS = _waits(MAX_WAIT)
_SESSION = (
    f"SELECT set_config('lock_timeout', '{_SESSION_WAITS[0]}', false),"
    f" set_config('statement_timeout', '{_SESSION_WAITS[1]}', false),"
    " set_config('synchronous_commit', 'on', false)"
)
_TIMED_OUT = ("55P03", "57014")  # lock_not_available, query_canceled

_MIGRATION_LOCK = 0x1F5E_7717  # advisory lock key for applying migrations
_COLUMNS = (
    "twin_id, version, state_hash, schema, body, extract(epoch from created_at)::float8,"
    " writer, token, notes"
)


_APPEND = (
    "INSERT INTO twin_snapshots"
    " (twin_id, version, state_hash, schema, body, writer, token, notes)"
    " SELECT l.twin_id, COALESCE((SELECT MAX(version) FROM twin_snapshots s"
    "   WHERE s.twin_id = l.twin_id), 0) + 1, %(hash)s, %(schema)s, %(body)s,"
    "   l.holder, l.token, %(notes)s"
    " FROM twin_leases l WHERE l.twin_id = %(t)s AND l.token = %(token)s"
    "   AND l.holder = %(holder)s AND l.expires_at > clock_timestamp()"
    " FOR UPDATE OF l"
    " RETURNING version, extract(epoch from created_at)::float8"
)

# Take the lease (as `acquire` does, fencing older leases; given up at commit) and insert version
# after + 1 only if version after is the newest (or after is 0 and there is none), in one
# statement. Its snapshot may predate a write committed while it waited for the lease row's
# lock; the primary key then makes the insert produce nothing (ON CONFLICT DO NOTHING sees
# committed rows), so no version is written twice or over a stale read.
_APPEND_AFTER = (
    "WITH lease AS ("
    " INSERT INTO twin_leases AS l (twin_id, holder, token, expires_at)"
    " VALUES (%(t)s, %(h)s, 1, to_timestamp(0))"
    " ON CONFLICT (twin_id) DO UPDATE SET holder = EXCLUDED.holder,"
    " token = l.token + 1, expires_at = EXCLUDED.expires_at"
    " WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder"
    " RETURNING token),"
    " ins AS ("
    " INSERT INTO twin_snapshots"
    " (twin_id, version, state_hash, schema, body, writer, token, notes)"
    " SELECT %(t)s, %(after)s + 1, %(hash)s, %(schema)s, %(body)s, %(h)s, lease.token, %(notes)s"
    " FROM lease WHERE NOT EXISTS (SELECT 1 FROM twin_snapshots s"
    "   WHERE s.twin_id = %(t)s AND s.version > %(after)s)"
    " AND (%(after)s = 0 OR EXISTS (SELECT 1 FROM twin_snapshots s"
    "   WHERE s.twin_id = %(t)s AND s.version = %(after)s))"
    " ON CONFLICT (twin_id, version) DO NOTHING"
    " RETURNING extract(epoch from created_at)::float8 AS created)"
    " SELECT lease.token, ins.created FROM lease LEFT JOIN ins ON true"
)


class _Direct:
    """A lease statement run through libpq itself (``psycopg.pq``): prepared under its own name
    on each connection the first time it meets one, its parameters sent as text with their
    types fixed, its one row read back as ``int`` or ``float`` (None for NULL). It skips
    psycopg's own per-statement work (adapting, its prepared-statement cache, cursors), which
    is most of the client's time in a single write. psycopg's errors are raised as usual."""

    def __init__(self, name: str, sql: str, types: Mapping[str, int], row: Sequence[type]):
        self.name = f"ipse_{name}_{zlib.crc32(sql.encode()):08x}".encode()  # new SQL, new name
        self.args = tuple(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))
        positional = sql
        for k, arg in enumerate(self.args, start=1):
            positional = positional.replace(f"%({arg})s", f"${k}")
        self.sql = positional.encode()
        self.types = [types[arg] for arg in self.args]
        self.row = tuple(row)

    def one(self, pg: Any, conn: Any, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """Run it on ``conn`` (autocommit, idle: its own implicit transaction); its row."""
        pq, pgconn, enc = pg.pq, conn.pgconn, conn.info.encoding
        values = [str(params[arg]).encode(enc) for arg in self.args]
        res = pgconn.exec_prepared(self.name, values)
        if res.status == pq.ExecStatus.FATAL_ERROR and (
            res.error_field(pq.DiagnosticField.SQLSTATE) == b"26000"  # not prepared here yet
        ):
            made = pgconn.prepare(self.name, self.sql, self.types)
            if made.status != pq.ExecStatus.COMMAND_OK:
                raise pg.errors.error_from_result(made, encoding=enc)
            res = pgconn.exec_prepared(self.name, values)
        if res.status != pq.ExecStatus.TUPLES_OK:
            raise pg.errors.error_from_result(res, encoding=enc)
        if res.ntuples == 0:
            return None
        cells = [res.get_value(0, i) for i in range(len(self.row))]
        return tuple(
            None if v is None else t(v.decode()) for t, v in zip(self.row, cells, strict=True)
        )


_TEXT, _INT4 = 25, 23  # type oids
_DIRECT = {
    _APPEND_AFTER: _Direct(
        "append_after",
        _APPEND_AFTER,
        {
            "t": _TEXT,
            "h": _TEXT,
            "after": _INT4,
            "hash": _TEXT,
            "schema": _INT4,
            "body": _TEXT,
            "notes": _TEXT,
        },
        (int, float),
    ),
}

_LATEST = (
    f"SELECT {_COLUMNS} FROM twin_snapshots WHERE twin_id = %s AND version > %s"
    " ORDER BY version DESC LIMIT 1"
)
# several reads in one query: the newest snapshot above each (twin, version), by position
_LATEST_MANY = (
    "SELECT q.i, s.* FROM unnest(%s::text[], %s::int[]) WITH ORDINALITY AS q(t, v, i)"
    f" CROSS JOIN LATERAL (SELECT {_COLUMNS} FROM twin_snapshots"
    " WHERE twin_id = q.t AND version > q.v ORDER BY version DESC LIMIT 1) s"
)


def _remaining(lease: Lease) -> float:
    """How long a lease holder may wait for a lock: until its lease runs out."""
    return lease.expires_at - time.time()


class PostgresBackend:
    """Leases and snapshot history in PostgreSQL."""

    def __init__(self, url: str, *, upto: Mapping[str, int] | None = None) -> None:
        self.url = redact(url)  # for messages only
        self._db = PostgresConnection(url, setup=_SESSION)
        self._pg = self._db.pg
        # as many transactions in flight as the pool has connections; callers beyond that
        # share the next one instead of waiting for a connection each
        self._group = GroupCommit(self._append_batch, leaders=self._db.pool.size)
        self._reads = GroupCommit(self._latest_batch, leaders=self._db.pool.size)
        try:
            self.migrate(upto)
        except BaseException:
            self._db.close()
            raise

    def _tx(self) -> contextlib.AbstractContextManager[Any]:
        """One transaction; psycopg errors become `StoreError`, ipse errors roll back."""
        return self._db.transaction()

    def _one(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement, run on its own (one round trip)."""
        return [tuple(row) for row in self._db.rows(sql, params)]

    def _timed_out(self, wait: float, exc: StoreError) -> WriterConflict | None:
        if getattr(exc.__cause__, "sqlstate", None) in _TIMED_OUT:
            return WriterConflict(
                f"the lease row is locked by another writer for more than {wait:.1f} s "
                "(a writer frozen inside its transaction?); try again"
            )
        return None

    def _bounded_one(
        self, wait: float, sql: str, params: dict[str, Any], *, flush: bool = True
    ) -> tuple[Any, ...] | None:
        """The first row of one lease statement run with waits bounded by ``wait`` seconds, in
        one round trip (its own implicit transaction); `WriterConflict` when a wait ran out.

        ``flush=False`` commits without waiting for the WAL flush (``synchronous_commit =
        off``), for lease changes only (see the module's docstring)."""
        waits = _waits(wait, flush)
        wait = min(MAX_WAIT, max(MIN_WAIT, wait))
        try:
            direct = _DIRECT.get(sql) if waits == _SESSION_WAITS else None
            if direct is not None:
                with self._db.connection() as conn:
                    return direct.one(self._pg, conn, params)
            with self._db.connection() as conn, conn.cursor() as cur:
                if waits == _SESSION_WAITS:
                    cur.execute(sql, params)
                else:
                    with conn.pipeline():
                        cur.execute(_SET_WAITS, waits)
                        cur.execute(sql, params)
                row = cur.fetchone() if cur.description is not None else None
        except StoreError as exc:
            conflict = self._timed_out(wait, exc)
            if conflict is not None:
                raise conflict from exc
            raise
        return None if row is None else tuple(row)

    @contextlib.contextmanager
    def _bounded(self, wait: float) -> Iterator[Any]:
        """One transaction whose lock waits end after ``wait`` seconds with `WriterConflict`."""
        wait = min(MAX_WAIT, max(MIN_WAIT, wait))
        try:
            with self._tx() as cur:
                cur.execute(f"SET LOCAL lock_timeout = {int(wait * 1000)}")
                cur.execute(f"SET LOCAL statement_timeout = {int((2 * wait + 5) * 1000)}")
                yield cur
        except WriterConflict:
            raise
        except StoreError as exc:
            conflict = self._timed_out(wait, exc)
            if conflict is not None:
                raise conflict from exc
            raise

    def migrate(self, upto: Mapping[str, int] | None = None) -> list[str]:
        """Apply pending migration steps under an advisory lock (only up to ``upto``)."""
        done: list[str] = []
        with self._tx() as cur:
            # a migration may wait and run as long as it needs (not the session's bounds)
            cur.execute("SET LOCAL lock_timeout = 0")
            cur.execute("SET LOCAL statement_timeout = 0")
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute(MIGRATIONS_TABLE_POSTGRES)
            cur.execute("SELECT component, step, name FROM ipse_migrations")
            applied = {(str(c), int(n)): str(name) for c, n, name in cur.fetchall()}
            for component, step in plan(applied, registered()):
                if upto is not None and step.number > upto.get(component, 0):
                    continue
                for statement in step.postgres:
                    cur.execute(statement)
                cur.execute(
                    "INSERT INTO ipse_migrations (component, step, name) VALUES (%s, %s, %s)",
                    (component, step.number, step.name),
                )
                done.append(f"{component}#{step.number} {step.name}")
        return done

    def applied_migrations(self) -> list[tuple[str, int, str]]:
        """The recorded migration steps, in order."""
        with self._tx() as cur:
            cur.execute("SELECT component, step, name FROM ipse_migrations ORDER BY 1, 2")
            return [(str(c), int(n), str(name)) for c, n, name in cur.fetchall()]

    def acquire(self, twin_id: str, holder: str, ttl: float) -> Lease:
        check_twin_id(twin_id)
        ttl = check_ttl(ttl)
        row = self._bounded_one(
            ttl,
            "INSERT INTO twin_leases AS l (twin_id, holder, token, expires_at)"
            " VALUES (%(t)s, %(h)s, 1, clock_timestamp() + make_interval(secs => %(s)s))"
            " ON CONFLICT (twin_id) DO UPDATE SET holder = EXCLUDED.holder,"
            " token = l.token + 1, expires_at = EXCLUDED.expires_at"
            " WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder"
            " RETURNING token, extract(epoch from expires_at)::float8",
            {"t": twin_id, "h": holder, "s": ttl},
            flush=False,
        )
        if row is None:
            self._conflict(twin_id)
        return Lease(twin_id, holder, int(row[0]), float(row[1]))

    def _conflict(self, twin_id: str) -> NoReturn:
        """Raise `WriterConflict` naming who holds the twin's lease."""
        rows = self._one("SELECT holder, token FROM twin_leases WHERE twin_id = %s", (twin_id,))
        other = rows[0] if rows else ("another writer", "?")
        raise WriterConflict(
            f"twin {twin_id!r} is being written by {other[0]!r} (lease token {other[1]})"
        )

    def _lock_current(self, cur: Any, lease: Lease) -> None:
        """Lock the lease row and check the caller still holds it."""
        cur.execute(
            "SELECT holder, token, expires_at > clock_timestamp() FROM twin_leases"
            " WHERE twin_id = %s FOR UPDATE",
            (lease.twin_id,),
        )
        row = cur.fetchone()
        if row is None or int(row[1]) != lease.token or row[0] != lease.holder:
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} was taken over; "
                "nothing was written"
            )
        if not row[2]:
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} expired; nothing was written"
            )

    def renew(self, lease: Lease, ttl: float) -> Lease:
        ttl = check_ttl(ttl)
        with self._bounded(_remaining(lease)) as cur:
            self._lock_current(cur, lease)
            cur.execute(
                "UPDATE twin_leases SET expires_at = clock_timestamp()"
                " + make_interval(secs => %s) WHERE twin_id = %s AND token = %s"
                " RETURNING extract(epoch from expires_at)::float8",
                (ttl, lease.twin_id, lease.token),
            )
            (expires,) = cur.fetchone()
        return Lease(lease.twin_id, lease.holder, lease.token, float(expires))

    def release(self, lease: Lease) -> None:
        self._bounded_one(
            _remaining(lease),
            "UPDATE twin_leases SET expires_at = to_timestamp(0)"
            " WHERE twin_id = %(t)s AND token = %(token)s",
            {"t": lease.twin_id, "token": lease.token},
            flush=False,
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
        params = {
            "hash": state_hash,
            "schema": schema,
            "body": body_text,
            "notes": notes_text,
            "t": lease.twin_id,
            "token": lease.token,
            "holder": lease.holder,
        }
        # One statement in one (bounded) implicit transaction, one round trip: the lease row is
        # locked (FOR UPDATE) and re-checked by the server; a concurrent takeover either waits
        # for this insert or makes it produce no row.
        row = self._bounded_one(_remaining(lease), _APPEND, params)
        if row is None:
            with self._bounded(_remaining(lease)) as cur:
                self._lock_current(cur, lease)  # raises, saying why
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} is no longer current; "
                "nothing was written"
            )
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
        params = {
            "t": twin_id,
            "h": holder,
            "after": after,
            "hash": state_hash,
            "schema": schema,
            "body": body_text,
            "notes": notes_text,
        }
        row = self._group.submit((ttl, params))
        if row is None:
            self._conflict(twin_id)
        if row[1] is None:
            return None
        return SnapshotRecord(
            twin_id=twin_id,
            version=after + 1,
            state_hash=state_hash,
            schema=schema,
            body=jsonio.loads(body_text),
            created_at=float(row[1]),
            writer=holder,
            token=int(row[0]),
            notes=tuple(jsonio.loads(notes_text)),
        )

    def _append_batch(self, batch: Sequence[Request]) -> None:
        """Run `append_after` requests (``(ttl, params)``) in one transaction, one round trip;
        when the server refused it (a lock wait ran out, a deadlock: nothing was committed),
        each in one of its own. When the connection failed (`ConnectionLost`: also when the
        server terminated the session, which may come after the commit), every request gets
        the error (none is acknowledged, none is written twice; each caller reads back)."""
        if len(batch) > 1:
            try:
                rows = self._batch_rows(batch)
            except StoreError as exc:
                if isinstance(exc, ConnectionLost):
                    for request in batch:
                        request.error = exc
                    return
            else:
                for request, row in zip(batch, rows, strict=True):
                    request.result = row
                return
        for request in batch:
            ttl, params = request.params
            try:
                request.result = self._bounded_one(ttl, _APPEND_AFTER, params)
            except Exception as exc:
                request.error = exc

    def _batch_rows(self, batch: Sequence[Request]) -> list[tuple[Any, ...] | None]:
        waits = _waits(min(float(r.params[0]) for r in batch))
        # lease rows locked in one order by every batch: two batches never deadlock
        order = sorted(range(len(batch)), key=lambda i: str(batch[i].params[1]["t"]))
        cursors: dict[int, Any] = {}
        with self._db.connection() as conn:
            with conn.pipeline(), conn.transaction():
                if waits != _SESSION_WAITS:
                    conn.execute(_SET_WAITS, waits)
                for i in order:
                    cursors[i] = conn.cursor()
                    cursors[i].execute(_APPEND_AFTER, batch[i].params[1])
            rows = [cursors[i].fetchone() for i in range(len(batch))]
        return [None if row is None else tuple(row) for row in rows]

    def latest(self, twin_id: str, newer_than: int = 0) -> SnapshotRecord | None:
        row = self._reads.submit((twin_id, newer_than))
        return None if row is None else record_from_row(row)

    def _latest_batch(self, batch: Sequence[Request]) -> None:
        """`latest` requests (``(twin_id, newer_than)``) in one query, one round trip."""
        if len(batch) > 1:
            twins = [str(r.params[0]) for r in batch]
            after = [int(r.params[1]) for r in batch]
            with contextlib.suppress(StoreError):  # then one query each, saying why
                rows = self._one(_LATEST_MANY, (twins, after))
                found = {int(row[0]): tuple(row[1:]) for row in rows}
                for i, request in enumerate(batch, start=1):
                    request.result = found.get(i)
                return
        for request in batch:
            try:
                rows = self._one(_LATEST, request.params)
                request.result = rows[0] if rows else None
            except Exception as exc:
                request.error = exc

    def latest_version(self, twin_id: str) -> int | None:
        rows = self._one("SELECT MAX(version) FROM twin_snapshots WHERE twin_id = %s", (twin_id,))
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def history(self, twin_id: str) -> list[SnapshotRecord]:
        rows = self._one(
            f"SELECT {_COLUMNS} FROM twin_snapshots WHERE twin_id = %s ORDER BY version",
            (twin_id,),
        )
        return [record_from_row(r) for r in rows]

    def twins(self) -> list[str]:
        rows = self._one("SELECT DISTINCT twin_id FROM twin_snapshots ORDER BY twin_id")
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        self._db.close()
