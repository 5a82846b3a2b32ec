"""The archive's two databases behind one small interface: a transaction, a query, a close.

SQLite writes in ``BEGIN IMMEDIATE`` transactions on ipse's shared connection; PostgreSQL
takes ``?`` placeholders rewritten to ``%s``, and reads with one statement each (no transaction
block: one round trip). A PostgreSQL search runs on connections of its own whose planner may
not scan a table whole nor walk an index in order (`SEARCH_SETUP`): it prices a scan of a table
whose ``tsvector`` column lies out of line (TOAST) as if it read no more than the row, and a
walk of the item numbers newest first as if matches were spread evenly, and so prefers reading
every document to asking the GIN index (50 ms at 20,000 items for a word in 17 of them,
against under 1 ms through the index).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ipse._redact import redact
from ipse.store._shared import PostgresConnection, SqliteConnection


class Driver(Protocol):
    url: str
    backend: str  # "sqlite" or "postgres"
    claim: str  # what makes a SELECT in a write transaction take its rows for itself

    def tx(self) -> contextlib.AbstractContextManager[Any]: ...
    def insert_rows(
        self, cur: Any, sql: str, rows: Sequence[Sequence[Any]]
    ) -> list[tuple[int, str, str]]: ...
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
    def insert_rows(
        cur: Any, sql: str, rows: Sequence[Sequence[Any]]
    ) -> list[tuple[int, str, str]]:
        """Run ``sql`` (``INSERT INTO t (...) VALUES``, one row of placeholders, ``ON CONFLICT
        DO NOTHING``) for each of ``rows``; (seq, item key, content) of each row added."""
        added = []
        for row in rows:
            cur.execute(sql, tuple(row))
            if cur.rowcount == 1:
                added.append((int(cur.lastrowid), str(row[1]), str(row[2])))
        return added

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def search(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def close(self) -> None:
        self._db.close()


ROWS_PER_STATEMENT = 1000  # PostgreSQL takes at most 65,535 parameters a statement
SEARCH_SETUP = (
    "SELECT set_config('enable_seqscan', 'off', false),"
    " set_config('enable_indexscan', 'off', false)"
)


class PostgresDriver:
    """A PostgreSQL connection; ``?`` placeholders become ``%s``."""

    backend = "postgres"
    claim = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str) -> None:
        self.url = redact(url)  # for messages only
        self._url = url
        self._db = PostgresConnection(url)
        self._search: PostgresConnection | None = None

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        with self._db.transaction() as cur:
            yield _PgCursor(cur)

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._db.rows(sql.replace("?", "%s"), tuple(params))]

    @staticmethod
    def insert_rows(
        cur: Any, sql: str, rows: Sequence[Sequence[Any]]
    ) -> list[tuple[int, str, str]]:
        """As `SqliteDriver.insert_rows`, in statements of many rows each (one round trip for
        up to `ROWS_PER_STATEMENT` rows)."""
        added: list[tuple[int, str, str]] = []
        head, _, tail = sql.partition(" ON CONFLICT")
        values = head[head.index("VALUES") + len("VALUES") :]
        head = head[: head.index("VALUES") + len("VALUES")]
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            statement = head + ",".join([values] * len(chunk)) + " ON CONFLICT" + tail
            cur.execute(
                statement + " RETURNING seq, item_id, content",
                [v for row in chunk for v in row],
            )
            added.extend((int(s), str(i), str(c)) for s, i, c in cur.fetchall())
        return added

    def search(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if self._search is None:
            self._search = PostgresConnection(self._url, setup=SEARCH_SETUP)
        return [tuple(r) for r in self._search.rows(sql.replace("?", "%s"), tuple(params))]

    def close(self) -> None:
        self._db.close()
        if self._search is not None:
            self._search.close()


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


__all__ = ["SEARCH_SETUP", "Driver", "PostgresDriver", "SqliteDriver"]
