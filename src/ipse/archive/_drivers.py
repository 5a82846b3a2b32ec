"""The archive's two databases behind one small interface: a transaction, a query, a close.

SQLite writes in ``BEGIN IMMEDIATE`` transactions on ipse's shared connection; PostgreSQL
takes ``?`` placeholders rewritten to ``%s``. ``search_settings`` are the statements a search
runs first in its own transaction: PostgreSQL's planner prices a scan of a table whose
``tsvector`` column lies out of line (TOAST) as if it read no more than the row, and so prefers
reading every document to asking the GIN index; a search turns those plans off for itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ipse.redact import redact
from ipse.store import PostgresConnection, SqliteConnection


class Driver(Protocol):
    url: str
    backend: str  # "sqlite" or "postgres"
    claim: str  # what makes a SELECT in a write transaction take its rows for itself

    def tx(self) -> contextlib.AbstractContextManager[Any]: ...
    def insert_seq(self, cur: Any, sql: str, params: Sequence[Any]) -> int | None: ...
    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...
    def search(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...
    def close(self) -> None: ...


class SqliteDriver:
    """One SQLite file; writes in ``BEGIN IMMEDIATE`` transactions."""

    backend = "sqlite"
    claim = ""  # BEGIN IMMEDIATE holds the writer lock already

    def __init__(self, path: Path) -> None:
        self.url = f"sqlite:///{path}"
        self._db = SqliteConnection(path)

    def tx(self) -> contextlib.AbstractContextManager[Any]:
        return self._db.write()

    @staticmethod
    def insert_seq(cur: Any, sql: str, params: Sequence[Any]) -> int | None:
        """Run an ``INSERT ... ON CONFLICT DO NOTHING``; the new row's ``seq``, or None."""
        cur.execute(sql, tuple(params))
        return int(cur.lastrowid) if cur.rowcount == 1 else None

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def search(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def close(self) -> None:
        self._db.close()


_SEARCH_SETTINGS = ("SET LOCAL enable_seqscan = off", "SET LOCAL enable_indexscan = off")


class PostgresDriver:
    """A PostgreSQL connection; ``?`` placeholders become ``%s``."""

    backend = "postgres"
    claim = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str) -> None:
        self.url = redact(url)  # for messages only
        self._db = PostgresConnection(url)

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        with self._db.transaction() as cur:
            yield _PgCursor(cur)

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.tx() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    @staticmethod
    def insert_seq(cur: Any, sql: str, params: Sequence[Any]) -> int | None:
        """Run an ``INSERT ... ON CONFLICT DO NOTHING``; the new row's ``seq``, or None."""
        cur.execute(sql + " RETURNING seq", params)
        rows = cur.fetchall()
        return int(rows[0][0]) if rows else None

    def search(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.tx() as cur:
            for setting in _SEARCH_SETTINGS:
                cur.execute(setting, ())
            cur.execute(sql, params)
            return list(cur.fetchall())

    def close(self) -> None:
        self._db.close()


class _PgCursor:
    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any]) -> None:
        self._cur.execute(sql.replace("?", "%s"), tuple(params))

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._cur.fetchall())


__all__ = ["Driver", "PostgresDriver", "SqliteDriver"]
