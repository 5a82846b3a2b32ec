"""Connections to the SQL databases the stores live in, with foreign errors translated once.

`SqliteConnection` opens a SQLite file in WAL mode and runs writes in ``BEGIN IMMEDIATE``
transactions (SQLite's writer lock, held across processes). The file holds archived tool output
and thinking, so it is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files
the database's mode), and an existing database and its -wal/-shm are tightened to 0600.
`PostgresConnection` opens PostgreSQL through psycopg 3, imported only here and only when
asked for. Both turn their driver's errors into `StoreError` naming the database (a PostgreSQL
URL without its password), and let ipse's own errors pass after rolling back. URLs reach
messages only through `ipse.redact.redact`. The twin backends and the archive share them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ipse.errors import IpseError, MissingExtra, StoreError
from ipse.fileio import PRIVATE_FILE, private_dir, tighten
from ipse.redact import redact


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


def postgres_error(url: str, exc: BaseException, lead: str = "PostgreSQL") -> StoreError:
    """The `StoreError` for a psycopg error: ``LEAD URL: WHY``, the URL without its password."""
    return StoreError(f"{lead} {redact(url)}: {redact(first_line(exc), url=url)}")


def psycopg_module() -> Any:
    """psycopg 3, or `MissingExtra` naming the extra that installs it."""
    try:
        import psycopg
    except ImportError as exc:
        raise MissingExtra("postgres", "psycopg") from exc
    return psycopg


class PostgresConnection:
    """One autocommit psycopg connection; `transaction` for atomic work."""

    def __init__(self, url: str) -> None:
        self.url = redact(url)  # for messages; the connection gets the real one
        self.pg = psycopg_module()
        try:
            self.raw: Any = self.pg.connect(url, autocommit=True)
        except self.pg.Error as exc:
            raise postgres_error(url, exc, "cannot connect to") from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor inside one transaction; psycopg errors become `StoreError`."""
        try:
            with self.raw.transaction(), self.raw.cursor() as cur:
                yield cur
        except IpseError:
            raise
        except self.pg.Error as exc:
            raise postgres_error(self.url, exc) from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()
