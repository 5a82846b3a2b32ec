"""Connections to the SQL databases the stores live in, with foreign errors translated once.

`SqliteConnection` opens a SQLite file in WAL mode and runs writes in ``BEGIN IMMEDIATE``
transactions (SQLite's writer lock, held across processes). The file holds archived tool output
and thinking, so it is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files
the database's mode), and an existing database and its -wal/-shm are tightened to 0600.
`PostgresConnection` reaches PostgreSQL through psycopg 3, imported only here and only when
asked for, and borrows its connections from one pool per process and database URL
(`PostgresPool`): every transaction takes a connection and gives it back, so threads share the
pool and opening a store again reuses the connections already open. The pool holds at most
``pool_size`` connections (a query parameter of the URL, removed before libpq sees it, else
``IPSE_PG_POOL_SIZE``, else `DEFAULT_POOL_SIZE`); a borrower waits at most `POOL_WAIT` seconds
for one to come back, then gets `StoreError`. The pool closes with the last connection object
using it; a forked child starts its own. Both turn their driver's errors into `StoreError`
naming the database (a PostgreSQL URL without its password), and let ipse's own errors pass
after rolling back. URLs reach
messages only through `ipse._redact.redact`. The twin backends and the archive share them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ipse._redact import redact
from ipse.errors import ConnectionLost, InputError, IpseError, MissingExtra, StoreError
from ipse.fileio import PRIVATE_FILE, private_dir, tighten


def _private_database(path: Path) -> None:
    """Create the database file 0600 (its folder 0700 when missing), or tighten it to 0600."""
    if not path.parent.exists():
        private_dir(path.parent)
    if str(path) == ":memory:":
        return
    if path.exists():
        # never open and close a database this process may hold open in SQLite: closing any
        # descriptor of a file drops every POSIX lock the process holds on it, SQLite's too,
        # and another process's last close would then delete the live -wal under it
        tighten(path)
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    except PermissionError:
        if not path.exists():
            raise
        # an existing file we may not write: SQLite may still open it read-only
    else:
        os.close(fd)
    tighten(path)


def _use_wal(raw: sqlite3.Connection, wait: float = 30.0) -> None:
    """Put the file in WAL mode, retrying while another process holds the lock it needs.

    Switching a file to WAL takes an exclusive lock, and SQLite answers "database is locked" at
    once, without its busy handler, when another connection is opening the same fresh file at
    the same moment; once the file is in WAL mode (the usual case) nothing is written."""
    deadline = time.monotonic() + wait
    while True:
        try:
            mode = raw.execute("PRAGMA journal_mode").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raw.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc).lower() or "busy" in str(exc).lower()
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class SqliteConnection:
    """One SQLite file: writes under the writer lock, reads outside any transaction.

    ``shared_across_threads``: the caller serialises use with its own lock and may use the
    connection from several threads (a proxy's worker threads)."""

    def __init__(self, path: str | Path, *, shared_across_threads: bool = False) -> None:
        self.path = Path(path)
        try:
            _private_database(self.path)
            self.raw = sqlite3.connect(
                str(self.path),
                timeout=30.0,
                isolation_level=None,
                check_same_thread=not shared_across_threads,
            )
            self.raw.execute("PRAGMA busy_timeout = 30000")
            _use_wal(self.raw)
            self.raw.execute("PRAGMA synchronous = NORMAL")
            self.raw.execute("PRAGMA foreign_keys = ON")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
        for suffix in ("-wal", "-shm"):
            tighten(f"{self.path}{suffix}")

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction (``BEGIN IMMEDIATE``); any exception rolls it back."""
        conn = self.raw
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite {self.path}: cannot start a transaction: {exc}") from exc
        try:
            yield conn.cursor()
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"SQLite {self.path}: {exc}") from exc
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite {self.path}: commit failed: {exc}") from exc

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        try:
            return list(self.raw.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite {self.path}: {exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.raw.close()


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (psycopg's run over several), redacted: a
    driver may quote the connection string it could not parse."""
    text = str(exc).strip()
    return redact(text.splitlines()[0]) if text else type(exc).__name__


# The server ended the session (pg_terminate_backend, a shutdown, a crash) or the connection
# failed: whatever was in flight may or may not have committed.
_LOST_STATES = frozenset({"57P01", "57P02", "57P03"})


def connection_lost(exc: BaseException) -> bool:
    """Whether a psycopg error says the connection failed rather than the server refused the
    statement: no SQLSTATE (libpq lost the connection), class 08 (connection exception),
    or the server ending the session (``57P01`` admin shutdown, ``57P02``, ``57P03``)."""
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        return state.startswith("08") or state in _LOST_STATES
    pg = psycopg_module()  # no SQLSTATE: libpq's own report, unless the client misused the API
    return isinstance(exc, pg.OperationalError | pg.InterfaceError) or type(exc) is pg.DatabaseError


def postgres_error(url: str, exc: BaseException, lead: str = "PostgreSQL") -> StoreError:
    """The `StoreError` for a psycopg error: ``LEAD URL: WHY``, the URL without its password;
    `ConnectionLost` when the connection failed (a write's outcome is then unknown)."""
    kind = ConnectionLost if connection_lost(exc) else StoreError
    return kind(f"{lead} {redact(url)}: {redact(first_line(exc), url=url)}")


def psycopg_module() -> Any:
    """psycopg 3, or `MissingExtra` naming the extra that installs it."""
    try:
        import psycopg
    except ImportError as exc:
        raise MissingExtra("postgres", "psycopg") from exc
    return psycopg


DEFAULT_POOL_SIZE = 8  # connections per process and database, at most
POOL_WAIT = 30.0  # seconds a transaction waits for a free connection, at most
POOL_SIZE_ENV = "IPSE_PG_POOL_SIZE"


def pool_settings(url: str) -> tuple[str, int]:
    """The URL for libpq (without ``pool_size``) and the pool's size limit.

    ``pool_size`` in the URL's query wins over ``IPSE_PG_POOL_SIZE``; the default is
    `DEFAULT_POOL_SIZE`."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in query if k == "pool_size"]
    conninfo = url
    if given:
        kept = [(k, v) for k, v in query if k != "pool_size"]
        conninfo = urlunsplit(parts._replace(query=urlencode(kept)))
    text = given[-1] if given else os.environ.get(POOL_SIZE_ENV, "")
    if not text:
        return conninfo, DEFAULT_POOL_SIZE
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        where = "pool_size in the store URL" if given else POOL_SIZE_ENV
        raise InputError(f"{where}: must be a whole number of connections >= 1, got {text!r}")
    return conninfo, size


class PostgresPool:
    """Up to ``size`` autocommit connections to one database, lent one transaction at a time.

    Idle connections are reused newest first; a connection given back broken or inside a
    transaction is closed rather than lent again. No background threads (safe across fork)."""

    def __init__(self, pg: Any, url: str, conninfo: str, size: int, setup: str = "") -> None:
        self.pg = pg
        self.url = redact(url)
        self.conninfo = conninfo
        self.size = size
        self.setup = setup  # run once on each new connection (session settings)
        self.users = 0
        self._idle: list[Any] = []
        self._open = 0  # idle and lent
        self._cond = threading.Condition()
        self._closed = False

    def get(self, wait: float = POOL_WAIT) -> Any:
        """A connection: an idle one, a new one while under the limit, else wait for one."""
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._open < self.size:
                    self._open += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreError(
                        f"PostgreSQL {self.url}: all {self.size} pooled connections stayed busy "
                        f"for {wait:.0f} s (raise pool_size in the URL or {POOL_SIZE_ENV})"
                    )
                self._cond.wait(left)
        try:
            conn = self.pg.connect(self.conninfo, autocommit=True)
            if self.setup:
                try:
                    conn.execute(self.setup)
                except BaseException:
                    conn.close()
                    raise
            return conn
        except BaseException as exc:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            if isinstance(exc, self.pg.Error):
                # the URL with its password, so that the pieces of it a driver quotes back
                # (an unescaped "@" read as a host) are masked too
                raise postgres_error(self.conninfo, exc, "cannot connect to") from exc
            raise

    def put(self, conn: Any) -> None:
        """Give a connection back (closed instead when broken, mid-transaction or pool closed)."""
        idle = self.pg.pq.TransactionStatus.IDLE
        reusable = not conn.closed and conn.info.transaction_status == idle
        with self._cond:
            if reusable and not self._closed:
                self._idle.append(conn)
            else:
                self._open -= 1
            self._cond.notify()
        if not reusable or self._closed:
            with contextlib.suppress(Exception):
                conn.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection lent for the ``with`` block."""
        conn = self.get()
        try:
            yield conn
        finally:
            self.put(conn)

    def close(self) -> None:
        """Close the idle connections; lent ones close when given back."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


_POOLS: dict[tuple[int, str, int, str], PostgresPool] = {}
_POOLS_LOCK = threading.Lock()


def _borrow_pool(pg: Any, url: str, setup: str) -> PostgresPool:
    conninfo, size = pool_settings(url)
    key = (os.getpid(), conninfo, size, setup)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = PostgresPool(pg, url, conninfo, size, setup)
        pool.users += 1
        return pool


def _return_pool(pool: PostgresPool) -> None:
    with _POOLS_LOCK:
        pool.users -= 1
        if pool.users > 0:
            return
        for key, value in list(_POOLS.items()):
            if value is pool:
                del _POOLS[key]
    pool.close()


class PostgresConnection:
    """A database reached through this process's pool; `transaction` for atomic work.

    Opening checks the database answers (a connection is made and kept in the pool).
    ``setup`` (one statement, session settings) runs once on each new connection; users with
    different ``setup`` never share a pool."""

    def __init__(self, url: str, *, setup: str = "") -> None:
        self.url = redact(url)  # for messages; the pool gets the real one
        self.pg = psycopg_module()
        self.pool = _borrow_pool(self.pg, url, setup)
        self._closed = False
        try:
            self.pool.put(self.pool.get())
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled autocommit connection for the ``with`` block; psycopg errors become
        `StoreError`."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except IpseError:
            raise
        except self.pg.Error as exc:
            raise postgres_error(self.url, exc) from exc

    def rows(self, sql: str, params: Any = ()) -> list[Any]:
        """The rows of one statement run on its own (one round trip, no transaction block);
        psycopg errors become `StoreError`. The short path for reads."""
        conn = self.pool.get()
        try:
            return list(conn.execute(sql, params).fetchall())
        except self.pg.Error as exc:
            raise postgres_error(self.url, exc) from exc
        finally:
            self.pool.put(conn)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor inside one transaction; psycopg errors become `StoreError`."""
        with self.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _return_pool(self.pool)
