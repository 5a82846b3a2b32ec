"""The archive on SQL: one implementation over SQLite (the default) and PostgreSQL.

The two backends share every statement but the search index's (`ipse.archive._index`); a small
driver gives each its connection, transaction and placeholder style (`ipse.archive._drivers`).
Key columns hold `stored_key` text (`ipse.archive._keys`). Opening an archive registers its
migration steps and lets the store package's backend apply every pending step
(`ipse.store.open_backend`), so the archive's tables live beside the twin tables in the same
database and the same ``ipse_migrations`` history; then every item not yet in the search index
is indexed (`index_pending`). sqlite3 and psycopg errors become `StoreError` in the drivers.

An item is keyed by session, id and content address: the same item stored again is kept once
(a moved cache breakpoint does not make it another), and a different item under a session and
id already taken is kept beside it, never dropped. Such a pair cannot be told apart by its id:
`find` refuses it, naming each one's full id (``id@`` and its address's first digits). An id
no item has is read as the start of one (six characters or more), unique in the scope asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ipse import _notes, jsonio
from ipse._sessions import session_names
from ipse.archive._base import Archivable, Found, Item, Match, Recalled
from ipse.archive._blobs import CODEC, address, compress, decompress, identity, payload
from ipse.archive._drivers import Driver
from ipse.archive._facets import match_column, path_needle
from ipse.archive._index import (
    Ask,
    Doc,
    ScanIndex,
    SearchIndex,
    document,
    given_facets,
    matches,
    session_token,
)
from ipse.archive._keys import key_text, lookup_keys, shown, storable, stored_key
from ipse.archive._scope import ALL, PROJECT, SESSION, Scope
from ipse.archive._text import excerpt_of
from ipse.errors import InputError, StoreError, UsageError

log = _notes.logger(__name__)

_COLUMNS = (
    "i.session, i.item_id, i.kind, i.tool, i.preview, i.size, i.position, i.action, i.paths,"
    " i.seq, i.content, i.call_sha256, i.result_sha256, i.path_match"
)
_CONTENT, _CALL, _RESULT, _PATHS = 10, 11, 12, 13  # places in a row of _COLUMNS
_PAGE = 500  # items a scan reads at a time
_MAX_TOKENS = 500  # sessions of a project a search names in its index query
_INSERT = (
    "INSERT INTO archive_items (session, item_id, content, kind, tool, action, paths,"
    " path_match, preview, size, call_sha256, result_sha256, position, source, indexed)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_QUALIFIED = re.compile(r"(.+)@([0-9a-f]{8,64})", re.DOTALL)
SHORT_CONTENT = 12  # hex digits of a content address in a full id
_CHUNK = 500  # ids per IN list
_BATCH = 200  # items indexed per transaction
MIN_PREFIX = 6  # characters of a session id that may name it by prefix
MIN_ID_PREFIX = 6  # characters of an item id that may name it by prefix (unique in scope)
_CANDIDATES = 10  # ids an ambiguous prefix's refusal names


class SqlArchive:
    """Archived items, their compressed, content-addressed JSON, and their search index."""

    def __init__(self, driver: Driver, index: SearchIndex) -> None:
        self._driver = driver
        self._index = index
        self.url = driver.url

    # ------------------------------------------------------------------------------ writing

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int:
        """Store ``removed`` under ``session`` (idempotent); the number of items newly added.

        Rows are written in one order whatever the order of ``removed``: every blob by its
        address, then every item by its key. Two writers that share blobs (the same output in two
        conversations, the same checkpoint archived by two proxy replicas at once) then wait for
        each other in that order and never deadlock; the loser of a race keeps the winner's row.
        Only items not stored yet are read for the index (a handoff archives its earlier items
        again each time)."""
        key = stored_key(session)
        known = self._known(key, [stored_key(i.id) for i in removed if i.call is not None])
        rows: list[tuple[tuple[Any, ...], Doc]] = []
        blobs: dict[str, bytes] = {}
        taken = 0
        for item in removed:
            if item.call is None:
                continue
            call = payload(item.call)
            result = payload(item.result) if item.result is not None else None
            content = identity(item.call, item.result, call + (result or b""))
            item_key = stored_key(item.id)
            if content in known.get(item_key, ()):
                continue
            taken += bool(known.get(item_key))
            blobs[address(call)] = call
            if result is not None:
                blobs[address(result)] = result
            doc = document(
                session_token(key),
                item.kind,
                item.tool,
                item.call,
                item.result,
                given_facets(item),
            )
            rows.append((self._row(key, item, content, call, result, source, doc), doc))
        rows.sort(key=lambda row: (row[0][1], row[0][2]))
        with self._driver.tx() as cur:
            for sha in sorted(blobs):
                self._blob(cur, sha, blobs[sha])
            if rows:
                cur.execute(
                    "INSERT INTO archive_sessions (session, project) VALUES (?, '')"
                    " ON CONFLICT DO NOTHING",
                    (key,),
                )
            added = self._driver.insert_rows(cur, _INSERT, [row for row, _ in rows])
            docs = {(row[1], row[2]): doc for row, doc in rows}
            self._index.add(cur, [(seq, docs[(key_, content)]) for seq, key_, content in added])
        if taken:
            log.warning(
                "archive: %d item(s) of session %s share an id with a different item archived "
                "under that session before (two conversations under one session key?): both "
                "are kept, and recall asks which by their full ids",
                taken,
                shown(key),
            )
        return len(added)

    def _row(
        self,
        key: str,
        item: Archivable,
        content: str,
        call: bytes,
        result: bytes | None,
        source: str,
        doc: Doc,
    ) -> tuple[Any, ...]:
        from ipse.archive._base import preview

        size = len(call) + (len(result) if result is not None else 0)
        return (
            key,
            stored_key(item.id),
            content,
            storable(item.kind),
            storable(item.tool),
            doc.action,
            storable("\n".join(doc.paths)),
            storable(match_column(doc.paths)),
            storable(preview(item)),
            size,
            address(call),
            address(result) if result is not None else None,
            item.message,
            storable(source),
            int(self._index.indexes),
        )

    def _known(self, key: str, item_keys: list[str]) -> dict[str, set[str]]:
        """The content addresses already stored under ``key`` for each of ``item_keys``."""
        known: dict[str, set[str]] = {}
        unique = sorted(set(item_keys))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            rows = self._driver.query(
                "SELECT item_id, content FROM archive_items WHERE session = ?"
                f" AND item_id IN ({marks})",
                (key, *chunk),
            )
            for item_id, content in rows:
                known.setdefault(str(item_id), set()).add(str(content))
        return known

    @staticmethod
    def _blob(cur: Any, sha: str, data: bytes) -> None:
        cur.execute(
            "INSERT INTO archive_blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (sha, CODEC, len(data), compress(data)),
        )

    def add_project(self, session: str, project: str) -> None:
        with self._driver.tx() as cur:
            cur.execute(
                "INSERT INTO archive_sessions (session, project) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                (stored_key(session), storable(project)),
            )

    def index_pending(self) -> int:
        """Index every item not in the search index yet (an archive from before the index,
        items written where SQLite had no FTS5); the number indexed."""
        pending = "SELECT 1 FROM archive_items WHERE indexed = 0 LIMIT 1"
        if not self._index.indexes or not self._driver.query(pending, ()):
            return 0
        done = 0
        while True:
            with self._driver.tx() as cur:
                cur.execute(
                    "SELECT seq, session, kind, tool, call_sha256, result_sha256 FROM"
                    " archive_items WHERE indexed = 0 ORDER BY seq LIMIT ?" + self._driver.claim,
                    (_BATCH,),
                )
                rows = cur.fetchall()
                for row in rows:
                    self._index_row(cur, row)
            done += len(rows)
            if len(rows) < _BATCH:
                return done

    def _index_row(self, cur: Any, row: Sequence[Any]) -> None:
        seq, session, kind, tool, call_sha, result_sha = row
        try:
            call_bytes = _load_with(cur, str(call_sha))
            result_bytes = _load_with(cur, str(result_sha)) if result_sha is not None else None
            call = jsonio.loads(call_bytes)
            result = jsonio.loads(result_bytes) if result_bytes is not None else None
        except (StoreError, ValueError) as exc:  # indexed by its tool alone, never lost
            log.warning("archive: item %s is indexed without its content: %s", seq, exc)
            call, result = {}, None
        doc = document(session_token(str(session)), str(kind), str(tool), call, result)
        content = identity(call, result) if call else f"{call_sha}/{result_sha or ''}"
        cur.execute(
            "UPDATE archive_items SET action = ?, paths = ?, path_match = ?, content = ?,"
            " indexed = 1 WHERE seq = ?",
            (
                doc.action,
                storable("\n".join(doc.paths)),
                storable(match_column(doc.paths)),
                content,
                seq,
            ),
        )
        self._index.add(cur, [(int(seq), doc)])

    # ------------------------------------------------------------------------------ sessions

    def resolve_session(self, name: str) -> tuple[str, ...]:
        """The stored keys of the session ``name`` names: the name as given and its other form
        (an agent CLI's bare id and ``session:<id>`` are one session, whichever a writer used),
        else the one session it begins (at least `MIN_PREFIX` characters); () when none.
        `UsageError` when it begins several."""
        forms = session_names(name) or (name,)
        keys = tuple(dict.fromkeys(k for form in forms for k in lookup_keys(form)))
        marks = ", ".join("?" * len(keys))
        rows = self._driver.query(
            f"SELECT DISTINCT session FROM archive_sessions WHERE session IN ({marks})", keys
        )
        if rows:
            held = {str(r[0]) for r in rows}
            return tuple(k for k in keys if k in held)
        if len(name.strip()) < MIN_PREFIX:
            return ()
        found: set[str] = set()
        for form in forms:
            start = stored_key(form)
            rows = self._driver.query(
                "SELECT DISTINCT session FROM archive_sessions WHERE substr(session, 1, ?) = ?"
                " LIMIT 2",
                (len(start), start),
            )
            found.update(str(r[0]) for r in rows)
        if len(found) > 1:
            raise UsageError(f"session {name!r} begins several sessions: give more of its id")
        return tuple(found)

    def sessions(self, scope: Scope | None = None) -> list[tuple[str, int]]:
        where, params = self._scope_sql(scope or Scope(ALL))
        if where is None:
            return []
        rows = self._driver.query(
            f"SELECT i.session, count(*) FROM archive_items i WHERE 1 = 1{where}"
            " GROUP BY i.session ORDER BY i.session",
            params,
        )
        return [(shown(str(s)), int(n)) for s, n in rows]

    def _scope_sql(self, scope: Scope) -> tuple[str | None, list[Any]]:
        """The WHERE condition (`` AND ...``) that keeps items of ``scope`` (alias ``i``); None
        when the scope names a session that is not there."""
        if scope.name == SESSION:
            keys = self.resolve_session(scope.session or "")
            if not keys:
                return None, []
            return f" AND i.session IN ({', '.join('?' * len(keys))})", list(keys)
        if scope.name == PROJECT:
            return (
                " AND i.session IN (SELECT session FROM archive_sessions WHERE project = ?)",
                [storable(scope.project or "")],
            )
        return "", []

    # ------------------------------------------------------------------------------ reading

    def items(self, session: str) -> list[Item]:
        where, params = self._scope_sql(Scope(SESSION, session=session))
        if where is None:
            return []
        rows = self._driver.query(
            f"SELECT {_COLUMNS} FROM archive_items i WHERE 1 = 1{where}"
            " ORDER BY i.position, i.item_id, i.seq",
            params,
        )
        return _qualified(rows)

    def listing(
        self, scope: Scope, action: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Item]:
        where, params = self._scope_sql(scope)
        if where is None:
            return []
        if action is not None:
            where += " AND i.action = ?"
            params.append(action)
        rows = self._driver.query(
            f"SELECT {_COLUMNS} FROM archive_items i WHERE 1 = 1{where}"
            " ORDER BY i.seq DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [_item(r) for r in rows]

    def recall(self, item_id: str, session: str | None = None) -> Recalled:
        scope = Scope(ALL) if session is None else Scope(SESSION, session=session)
        return self.find(item_id, scope)

    def find(self, item_id: str, scope: Scope) -> Recalled:
        where, params = self._scope_sql(scope)
        rows: list[tuple[Any, ...]] = []
        qualified = _QUALIFIED.fullmatch(item_id)
        if where is not None:
            sql = f"SELECT {_COLUMNS} FROM archive_items i WHERE i.item_id = ?{where}"
            for key in lookup_keys(item_id):
                rows = self._driver.query(sql + " ORDER BY i.session, i.seq", (key, *params))
                if rows:
                    break
            if not rows and qualified is not None:
                rows = self._driver.query(
                    sql + " AND substr(i.content, 1, ?) = ? ORDER BY i.session, i.seq",
                    (stored_key(qualified[1]), *params, len(qualified[2]), qualified[2]),
                )
            if not rows and qualified is None and len(item_id) >= MIN_ID_PREFIX:
                rows = self._by_prefix(item_id, where, params)
        if not rows:
            where_said = "" if scope.name == ALL else f" in {scope.describe()}"
            raise InputError(f"no archived item {item_id!r}{where_said}")
        _refuse_ambiguous(item_id, rows)
        row = rows[0]
        item = _item(row)
        if qualified is not None and item_id != item.id:
            item = replace(item, id=_full(item.id, row))
        return Recalled(item, self._load(str(row[_CALL])), self._load_optional(row[_RESULT]))

    def _by_prefix(self, prefix: str, where: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """The items whose id starts with ``prefix``; `UsageError` naming them if ids differ."""
        key = stored_key(prefix)
        rows = self._driver.query(
            f"SELECT {_COLUMNS} FROM archive_items i WHERE substr(i.item_id, 1, ?) = ?{where}"
            " ORDER BY i.session, i.seq LIMIT ?",
            (len(key), key, *params, _CANDIDATES + 1),
        )
        ids = sorted({shown(str(r[1])) for r in rows})
        if len(ids) > 1:
            more = ", ..." if len(rows) > _CANDIDATES else ""
            raise UsageError(
                f"id prefix {prefix!r} starts {len(ids)} archived ids ({', '.join(ids)}{more}); "
                "give more of the id"
            )
        return rows

    def search(self, ask: Ask, scope: Scope, limit: int) -> Found:
        where, params = self._scope_sql(scope)
        if where is None:
            return Found((), self._index.method)
        tokens = self._tokens(scope, params)
        ask = replace(ask, sessions=tokens or ())
        exact = ask.path is None and (scope.name != PROJECT or tokens is not None)
        if isinstance(self._index, ScanIndex):
            hits = self._scan(ask, where, params, limit)
        else:
            hits = self._tiers(ask, where, params, limit, exact)
        return Found(self._matches(hits, ask), self._index.method)

    def _tokens(self, scope: Scope, params: list[Any]) -> tuple[str, ...] | None:
        """The index tokens of the sessions in ``scope``: None for any session, or for a
        project of more sessions than a query should name (the rows then say)."""
        if scope.name == SESSION:
            return tuple(session_token(key) for key in params)
        if scope.name != PROJECT:
            return None
        rows = self._driver.query(
            "SELECT DISTINCT session FROM archive_sessions WHERE project = ? LIMIT ?",
            (params[0], _MAX_TOKENS + 1),
        )
        if len(rows) > _MAX_TOKENS:
            return None
        return tuple(sorted(session_token(str(r[0])) for r in rows)) or ("none",)

    def _tiers(
        self, ask: Ask, where: str, params: list[Any], limit: int, exact: bool
    ) -> list[tuple[tuple[Any, ...], str]]:
        """Items with every word in the call first, then those with some only in the output;
        newest first within each."""
        if not ask.words:
            found = self._select(ask, where, params, limit, exact)
            return [(r, "call") for r in found]
        first = self._select(replace(ask, call_only=True), where, params, limit, exact)
        hits = [(r, "call") for r in first]
        if len(hits) < limit:
            seen = {r[9] for r in first}
            rest = self._select(ask, where, params, limit + len(first), exact)
            hits += [(r, "output") for r in rest if r[9] not in seen][: limit - len(hits)]
        return hits

    def _select(
        self, ask: Ask, where: str, params: list[Any], limit: int, exact: bool
    ) -> list[tuple[Any, ...]]:
        """The newest ``limit`` items answering ``ask`` in the scope. An index that reads a
        capped number of candidates (`SearchIndex.capped`) reads more when the scope's rows
        or the path test kept too few of them."""
        caps: tuple[int | None, ...] = (None,)
        if self._index.capped:
            caps = (limit,) if exact else (limit * 4, limit * 64, None)
        rows: list[tuple[Any, ...]] = []
        for cap in caps:
            source, asked = self._index.select(ask, cap)
            sql = f"SELECT {_COLUMNS} FROM {source}{where}"
            values = [*asked, *params]
            if ask.path is not None:
                sql += " AND " + self._index.contains("i.path_match")
                values.append(path_needle(ask.path))
            sql += f" ORDER BY {self._index.order} DESC LIMIT ?"
            rows = self._driver.search(sql, (*values, limit))
            if len(rows) >= limit:
                break
        return rows

    def _scan(
        self, ask: Ask, where: str, params: list[Any], limit: int
    ) -> list[tuple[tuple[Any, ...], str]]:
        """A search without an index: every item of the scope read, newest first."""
        first: list[tuple[Any, ...]] = []
        rest: list[tuple[Any, ...]] = []
        needle = path_needle(ask.path) if ask.path is not None else None
        offset = 0
        while len(first) < limit:
            rows = self._driver.query(
                f"SELECT {_COLUMNS} FROM archive_items i WHERE 1 = 1{where}"
                " ORDER BY i.seq DESC LIMIT ? OFFSET ?",
                (*params, _PAGE, offset),
            )
            for row in rows:
                if needle is not None and needle not in str(row[_PATHS]):
                    continue
                call, result = self._decoded(row)
                doc = document("", str(row[2]), str(row[3]), call, result)
                if matches(doc, replace(ask, call_only=True)):
                    first.append(row)
                elif len(rest) < limit and matches(doc, ask):
                    rest.append(row)
            if len(rows) < _PAGE:
                break
            offset += _PAGE
        hits = [(r, "call") for r in first[:limit]]
        return hits + [(r, "output") for r in rest[: limit - len(hits)]]

    def _decoded(self, row: Sequence[Any]) -> tuple[Any, Any]:
        call = jsonio.loads(self._load(str(row[_CALL])))
        result_bytes = self._load_optional(row[_RESULT])
        return call, jsonio.loads(result_bytes) if result_bytes is not None else None

    def _matches(self, hits: list[tuple[tuple[Any, ...], str]], ask: Ask) -> tuple[Match, ...]:
        """The hits with their excerpts, and their full ids where an id is shared."""
        if not hits:
            return ()
        rows = [row for row, _ in hits]
        shas = sorted({str(r[_CALL]) for r in rows} | {str(r[_RESULT]) for r in rows if r[_RESULT]})
        blobs = self._load_many(shas)
        marks = ", ".join("?" * len(rows))
        shared = {
            (str(s), str(i))
            for s, i in self._driver.query(
                "SELECT session, item_id FROM archive_items WHERE item_id IN"
                f" ({marks}) GROUP BY session, item_id HAVING count(*) > 1",
                [r[1] for r in rows],
            )
        }
        asked = list(ask.words or ask.path_words)
        found = []
        for row, found_in in hits:
            item = _item(row)
            if (str(row[0]), str(row[1])) in shared:
                item = replace(item, id=_full(item.id, row))
            call = jsonio.loads(blobs[str(row[_CALL])])
            result = jsonio.loads(blobs[str(row[_RESULT])]) if row[_RESULT] else None
            excerpt = excerpt_of(item.tool, call, result, asked, found_in)
            found.append(Match(item, excerpt, found_in))
        return tuple(found)

    def _load_many(self, shas: list[str]) -> dict[str, bytes]:
        marks = ", ".join("?" * len(shas))
        rows = self._driver.query(
            f"SELECT sha256, codec, data FROM archive_blobs WHERE sha256 IN ({marks})", shas
        )
        loaded = {
            str(sha): decompress(bytes(data), str(codec), str(sha)) for sha, codec, data in rows
        }
        missing = [sha for sha in shas if sha not in loaded]
        if missing:
            raise StoreError(f"archive blob {missing[0][:12]} is missing")
        return loaded

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


def _load_with(cur: Any, sha: str) -> bytes:
    cur.execute("SELECT codec, data FROM archive_blobs WHERE sha256 = ?", (sha,))
    rows = cur.fetchall()
    if not rows:
        raise StoreError(f"archive blob {sha[:12]} is missing")
    codec, data = rows[0]
    return decompress(bytes(data), str(codec), sha)


def _refuse_ambiguous(item_id: str, rows: list[tuple[Any, ...]]) -> None:
    """`UsageError` when ``rows`` are items of several sessions, or several different items of
    one session (which nothing can tell apart: neither is given)."""
    sessions = sorted({str(r[0]) for r in rows})
    if len(sessions) > 1:
        names = ", ".join(shown(s) for s in sessions)
        raise UsageError(f"item {item_id!r} is in several sessions ({names}); name the session")
    if len(rows) > 1:
        ids = ", ".join(_full(shown(str(r[1])), r) for r in rows)
        raise UsageError(
            f"item {item_id!r} of session {shown(sessions[0])!r} is {len(rows)} different items "
            "(conversations filed under one session key, which cannot be told apart), so none "
            f"is given; give each conversation its own session, or recall one by its full id: "
            f"{ids}"
        )


def _qualified(rows: list[tuple[Any, ...]]) -> list[Item]:
    """Items, with ``id@content`` for those whose id two different items of a session share."""
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        counts[(str(row[0]), str(row[1]))] = counts.get((str(row[0]), str(row[1])), 0) + 1
    items = []
    for row in rows:
        item = _item(row)
        if counts[(str(row[0]), str(row[1]))] > 1:
            item = replace(item, id=_full(item.id, row))
        items.append(item)
    return items


def _full(item_id: str, row: Sequence[Any]) -> str:
    """An item's full id: its id, ``@`` and its content address's first hex digits."""
    return f"{item_id}@{str(row[_CONTENT])[:SHORT_CONTENT]}"


def _item(row: Sequence[Any]) -> Item:
    session, item_id, kind, tool, text, size, position, action, paths, seq = row[:10]
    return Item(
        session=shown(str(session)),
        id=shown(str(item_id)),
        kind=str(kind),
        tool=str(tool),
        preview=str(text),
        size=int(size),
        position=int(position),
        action=str(action),
        paths=tuple(p for p in str(paths).split("\n") if p),
        seq=int(seq),
    )


__all__ = ["MIN_ID_PREFIX", "MIN_PREFIX", "SHORT_CONTENT", "SqlArchive", "key_text"]
