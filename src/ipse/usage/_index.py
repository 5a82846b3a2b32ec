"""The usage index in ipse's store: what was read of each session file, and the last ledger.

SQLite by default, PostgreSQL with a ``postgresql://`` URL, in the same database as the rest
of ipse's data (`ipse.store`; tables in `ipse.usage._schema`). Values are stored as msgpack
(calls, ledger) and JSON (reader states, losses). Errors from either database are the store's
`StoreError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ipse import jsonio
from ipse._redact import redact
from ipse.errors import InputError
from ipse.usage._call import Call
from ipse.usage._ledger import Ledger
from ipse.usage._schema import ensure_registered

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder()
# a change to how calls or the ledger are made or stored: the ledger is made again
LEDGER_VERSION = "1"


@dataclass(slots=True)
class FileEntry:
    """What the index knows of one file (its calls apart, loaded on demand)."""

    path: str
    reader: str
    size: int
    mtime_ns: int
    inode: int
    read_to: int
    tail: bytes
    state: dict[str, Any]
    losses: list[list[Any]] | None = None
    replayed_size: int | None = None


class UsageIndex:
    """The index's two tables in the store at ``url`` (None: the default store)."""

    def __init__(self, url: str | None = None) -> None:
        from ipse.store import open_backend
        from ipse.store._shared import (
            PostgresConnection,
            SqliteConnection,
            default_url,
            sqlite_path,
        )

        url = url or default_url()
        if not url.startswith(("sqlite:", "postgresql://", "postgres://")):
            raise InputError(
                f"store URL {redact(url)!r}: the usage index needs sqlite:///PATH or "
                "postgresql://..."
            )
        ensure_registered()
        open_backend(url).close()  # applies every pending step, the usage tables' included
        self.postgres = not url.startswith("sqlite:")
        self._db: Any = (
            PostgresConnection(url) if self.postgres else SqliteConnection(sqlite_path(url))
        )

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        if self.postgres:
            with self._db.transaction() as cur:
                yield _Placeholders(cur)
        else:
            with self._db.write() as cur:
                yield cur

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            with self._tx() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        rows: list[tuple[Any, ...]] = self._db.read(sql, params)
        return rows

    def ledger(self, fingerprint: str) -> Ledger | None:
        """The last ledger, when it was made from files with this fingerprint."""
        rows = self._rows("SELECT fingerprint, body FROM usage_ledger WHERE name = ?", ("ledger",))
        if not rows or rows[0][0] != f"{LEDGER_VERSION}:{fingerprint}":
            return None
        return Ledger.from_state(_DECODER.decode(bytes(rows[0][1])))

    def save_ledger(self, fingerprint: str, ledger: Ledger) -> None:
        """Keep ``ledger`` as made from files with this fingerprint."""
        body = _ENCODER.encode(ledger.to_state())
        with self._tx() as cur:
            cur.execute("DELETE FROM usage_ledger WHERE name = ?", ("ledger",))
            cur.execute(
                "INSERT INTO usage_ledger (name, fingerprint, body) VALUES (?, ?, ?)",
                ("ledger", f"{LEDGER_VERSION}:{fingerprint}", body),
            )

    def files(self) -> dict[str, FileEntry]:
        """Every file the index knows, without its calls."""
        rows = self._rows(
            "SELECT path, reader, size, mtime_ns, inode, read_to, tail, state, losses,"
            " replayed_size FROM usage_files"
        )
        return {
            r[0]: FileEntry(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                bytes(r[6]),
                jsonio.loads(r[7]),
                None if r[8] is None else jsonio.loads(r[8]),
                r[9],
            )
            for r in rows
        }

    def calls(self, paths: Sequence[str] | None = None) -> dict[str, list[Call]]:
        """The calls of ``paths`` (None: of every file)."""
        if paths is None:
            rows = self._rows("SELECT path, calls FROM usage_files")
        else:
            rows = []
            for at in range(0, len(paths), 500):
                chunk = list(paths[at : at + 500])
                marks = ", ".join("?" * len(chunk))
                rows += self._rows(
                    f"SELECT path, calls FROM usage_files WHERE path IN ({marks})", chunk
                )
        return {r[0]: [Call(*values) for values in _DECODER.decode(bytes(r[1]))] for r in rows}

    def put(self, entries: Sequence[tuple[FileEntry, list[Call]]], gone: Sequence[str]) -> None:
        """Store what was read of ``entries`` and forget the files in ``gone``, at once."""
        with self._tx() as cur:
            for path in gone:
                cur.execute("DELETE FROM usage_files WHERE path = ?", (path,))
            for entry, calls in entries:
                cur.execute("DELETE FROM usage_files WHERE path = ?", (entry.path,))
                cur.execute(
                    "INSERT INTO usage_files (path, reader, size, mtime_ns, inode, read_to,"
                    " tail, state, calls, losses, replayed_size)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        entry.path,
                        entry.reader,
                        entry.size,
                        entry.mtime_ns,
                        entry.inode,
                        entry.read_to,
                        entry.tail,
                        jsonio.dumps(entry.state).decode(),
                        _ENCODER.encode([c.row() for c in calls]),
                        None if entry.losses is None else jsonio.dumps(entry.losses).decode(),
                        entry.replayed_size,
                    ),
                )

    def set_losses(self, entries: Sequence[FileEntry]) -> None:
        """Keep what the replay found in each of ``entries`` (its calls untouched)."""
        with self._tx() as cur:
            for entry in entries:
                cur.execute(
                    "UPDATE usage_files SET losses = ?, replayed_size = ? WHERE path = ?",
                    (jsonio.dumps(entry.losses).decode(), entry.replayed_size, entry.path),
                )

    def forget_ledger(self) -> None:
        """Drop the last ledger (the next run makes it again from the files' entries)."""
        with self._tx() as cur:
            cur.execute("DELETE FROM usage_ledger WHERE name = ?", ("ledger",))

    def close(self) -> None:
        self._db.close()


class _Placeholders:
    """A psycopg cursor taking SQLite's ``?`` placeholders."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cur.execute(sql.replace("?", "%s"), tuple(params))

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._cur.fetchall())


__all__ = ["LEDGER_VERSION", "FileEntry", "UsageIndex"]
