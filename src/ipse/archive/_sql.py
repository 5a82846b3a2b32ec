"""The archive on SQL: one implementation over SQLite (the default) and PostgreSQL.

The two backends share every statement; a small driver gives each its connection, transaction
and placeholder style. The key columns (session, item id) hold `stored_key` of the text,
which keeps apart texts that only a database's escaping would confuse; the other columns are
for reading and hold `storable` text. Opening an archive registers its migration steps and
lets the store package's backend apply every pending step (`ipse.store.open_backend`), so the
archive's tables live beside the twin tables in the same database and the same
``ipse_migrations`` history. sqlite3 and psycopg errors become `StoreError` here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ipse.archive._base import Archivable, Item, Recalled, preview
from ipse.archive._blobs import CODEC, address, compress, decompress, payload
from ipse.errors import InputError, StoreError, UsageError
from ipse.redact import redact
from ipse.store import PostgresConnection, SqliteConnection

_ITEM_COLUMNS = "session, item_id, kind, tool, preview, size, position"


class _Driver(Protocol):
    url: str

    def tx(self) -> contextlib.AbstractContextManager[Any]: ...
    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...
    def close(self) -> None: ...


class SqlArchive:
    """Archived items and their compressed, content-addressed JSON."""

    def __init__(self, driver: _Driver) -> None:
        self._driver = driver
        self.url = driver.url

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int:
        """Store ``removed`` under ``session`` (idempotent); the number of items newly added.

        Rows are written in one order whatever the order of ``removed``: every blob by its
        address, then every item by its key. Two writers that share blobs (the same output in two
        conversations, the same checkpoint archived by two proxy replicas at once) then wait for
        each other in that order and never deadlock; the loser of a race keeps the winner's row."""
        rows = []
        blobs: dict[str, bytes] = {}
        for item in removed:
            if item.call is None:
                continue
            call = payload(item.call)
            result = payload(item.result) if item.result is not None else None
            call_sha = address(call)
            blobs[call_sha] = call
            result_sha = None
            if result is not None:
                result_sha = address(result)
                blobs[result_sha] = result
            size = len(call) + (len(result) if result is not None else 0)
            rows.append(
                (
                    stored_key(session),
                    stored_key(item.id),
                    storable(item.kind),
                    storable(item.tool),
                    storable(preview(item)),
                    size,
                    call_sha,
                    result_sha,
                    item.message,
                    storable(source),
                )
            )
        rows.sort(key=lambda row: row[1])
        added = 0
        with self._driver.tx() as cur:
            for sha in sorted(blobs):
                self._blob(cur, sha, blobs[sha])
            for row in rows:
                cur.execute(
                    "INSERT INTO archive_items (session, item_id, kind, tool, preview, size,"
                    " call_sha256, result_sha256, position, source) VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    row,
                )
                added += max(cur.rowcount, 0)
        return added

    @staticmethod
    def _blob(cur: Any, sha: str, data: bytes) -> None:
        cur.execute(
            "INSERT INTO archive_blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (sha, CODEC, len(data), compress(data)),
        )

    def items(self, session: str) -> list[Item]:
        for key in _keys(session):
            rows = self._driver.query(
                f"SELECT {_ITEM_COLUMNS} FROM archive_items WHERE session = ?"
                " ORDER BY position, item_id",
                (key,),
            )
            if rows:
                break
        return [_item(row) for row in rows]

    def sessions(self) -> list[tuple[str, int]]:
        rows = self._driver.query(
            "SELECT session, count(*) FROM archive_items GROUP BY session ORDER BY session", ()
        )
        return [(shown(str(s)), int(n)) for s, n in rows]

    def recall(self, item_id: str, session: str | None = None) -> Recalled:
        sql = (
            f"SELECT {_ITEM_COLUMNS}, call_sha256, result_sha256 FROM archive_items"
            " WHERE item_id = ?"
        )
        rows: list[tuple[Any, ...]] = []
        for key in _keys(item_id):
            if session is None:
                rows = self._driver.query(sql + " ORDER BY session", (key,))
            else:
                for session_key in _keys(session):
                    rows = self._driver.query(
                        sql + " AND session = ? ORDER BY session", (key, session_key)
                    )
                    if rows:
                        break
            if rows:
                break
        if not rows:
            where = f" in session {session!r}" if session is not None else ""
            raise InputError(f"no archived item {item_id!r}{where}")
        if len(rows) > 1:
            names = ", ".join(shown(str(r[0])) for r in rows)
            raise UsageError(f"item {item_id!r} is in several sessions ({names}); use --session")
        row = rows[0]
        return Recalled(_item(row[:7]), self._load(str(row[7])), self._load_optional(row[8]))

    def _load_optional(self, sha: Any) -> bytes | None:
        return None if sha is None else self._load(str(sha))

    def _load(self, sha: str) -> bytes:
        rows = self._driver.query("SELECT codec, data FROM archive_blobs WHERE sha256 = ?", (sha,))
        if not rows:
            raise StoreError(f"archive blob {sha[:12]} is missing")
        codec, data = rows[0]
        return decompress(bytes(data), str(codec), sha)

    def close(self) -> None:
        self._driver.close()


def storable(text: str) -> str:
    """``text`` as a database stores it: a lone surrogate (a model's output cut inside an
    emoji, a file name that is not UTF-8) becomes its escape, and NUL, which PostgreSQL text
    refuses, becomes ``\\x00``. Not one to one (a text holding the escape itself maps to the
    same), which is why key columns hold `stored_key` instead."""
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    escaped = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return escaped.replace("\x00", "\\x00")


def stored_key(text: str) -> str:
    """``text`` as a key column stores it: every backslash doubled, then NUL and lone
    surrogates escaped as `storable` does. Unlike `storable` alone, no two texts share a key:
    an id holding NUL and one holding the four characters ``\\x00`` are two items."""
    return storable(text.replace("\\", "\\\\"))


_KEY_ESCAPE = re.compile(r"\\(\\|x00|u[0-9a-f]{4})")


def key_text(stored: str) -> str:
    """The text a key column's value was made from (`stored_key` undone)."""
    if "\\" not in stored:
        return stored
    return _KEY_ESCAPE.sub(_unescape, stored)


def _unescape(match: re.Match[str]) -> str:
    code = match[1]
    return "\\" if code == "\\" else chr(int(code[1:], 16))


def shown(stored: str) -> str:
    """A key as listings show it: the text itself, NUL and lone surrogates as escapes."""
    return storable(key_text(stored))


def _keys(text: str) -> tuple[str, ...]:
    """The keys to look ``text`` up by, in order: its own, then ``text`` read as a stored key,
    so that an id a listing shows with an escape (it holds NUL) is found as shown."""
    own = stored_key(text)
    return (own,) if own == text or storable(text) != text else (own, text)


def _item(row: Sequence[Any]) -> Item:
    session, item_id, kind, tool, text, size, position = row
    return Item(
        session=shown(str(session)),
        id=shown(str(item_id)),
        kind=str(kind),
        tool=str(tool),
        preview=str(text),
        size=int(size),
        position=int(position),
    )


# ---------------------------------------------------------------------------------- drivers


class SqliteDriver:
    """One SQLite file; writes in ``BEGIN IMMEDIATE`` transactions."""

    def __init__(self, path: Path) -> None:
        self.url = f"sqlite:///{path}"
        self._db = SqliteConnection(path)

    def tx(self) -> contextlib.AbstractContextManager[Any]:
        return self._db.write()

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.read(sql, params)

    def close(self) -> None:
        self._db.close()


class PostgresDriver:
    """A PostgreSQL connection; ``?`` placeholders become ``%s``."""

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


__all__ = ["PostgresDriver", "SqlArchive", "SqliteDriver"]
