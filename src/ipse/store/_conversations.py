"""Per-conversation state of requests seen on the wire: the checkpoint anchor and counters.

A proxy keys each conversation (Claude Code's ``x-claude-code-session-id``, else a hash of the
first user message and the system prompt) and records every request: how many there were, how
many handoffs were made, what they removed, and the anchor (the id of the checkpoint call the
newest handoff cut at). The store is what lets several proxy processes behind a load balancer
agree: on PostgreSQL, a `record` is one atomic upsert, so counters never lose an update.

What the counts promise:

- ``requests``: every request of the conversation that reached the store once. A request sent
  again unchanged right after (its digest, ``request``, the same as the one counted last: a
  client's retry, a load balancer's) adds nothing, so every answered request counts exactly
  once; a request cut off before its answer and never sent again counts once too (it reached
  an upstream).
- ``handoffs``: the cuts, each once: a request handed off at an anchor the conversation was not
  cut at before (`ipse._handoff_events.is_new_cut`); the later requests that carry the same
  rewritten prefix are not more handoffs. ``removed_calls`` and ``removed_bytes`` add what each
  cut removed, once. ``cut_request`` is the digest of the request that made the newest cut,
  which tells every replica whether the request it counted was the handoff.

Three backends with one contract (`ConversationStore`; the conformance checks are in
``ipse.store.testing``): in memory (the reference), SQLite and PostgreSQL, on the same database
as the other stores; the table is the ``conversations`` component's migration steps.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ipse._handoff_events import is_new_cut
from ipse._redact import redact
from ipse.errors import InputError
from ipse.store._connections import PostgresConnection, SqliteConnection
from ipse.store._migrations import MigrationStep, register

COMPONENT = "conversations"

STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(
        number=1,
        name="conversation anchors and counters",
        sqlite=(
            "CREATE TABLE wire_conversations ("
            " key TEXT PRIMARY KEY, anchor TEXT, requests INTEGER NOT NULL,"
            " handoffs INTEGER NOT NULL, removed_calls INTEGER NOT NULL,"
            " removed_bytes INTEGER NOT NULL, first_seen REAL NOT NULL,"
            " last_seen REAL NOT NULL)",
        ),
        postgres=(
            "CREATE TABLE wire_conversations ("
            " key TEXT PRIMARY KEY, anchor TEXT, requests BIGINT NOT NULL,"
            " handoffs BIGINT NOT NULL, removed_calls BIGINT NOT NULL,"
            " removed_bytes BIGINT NOT NULL, first_seen DOUBLE PRECISION NOT NULL,"
            " last_seen DOUBLE PRECISION NOT NULL)",
        ),
    ),
    MigrationStep(
        number=2,
        name="the request counted last and the request of the newest cut",
        sqlite=(
            "ALTER TABLE wire_conversations ADD COLUMN last_request TEXT",
            "ALTER TABLE wire_conversations ADD COLUMN cut_request TEXT",
        ),
        postgres=(
            "ALTER TABLE wire_conversations ADD COLUMN last_request TEXT",
            "ALTER TABLE wire_conversations ADD COLUMN cut_request TEXT",
        ),
    ),
)


def ensure_registered() -> None:
    """Register the component's steps (idempotent); called when the store is opened."""
    register(COMPONENT, STEPS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationState:
    """What is known about one conversation."""

    key: str
    anchor: str | None
    requests: int
    handoffs: int
    removed_calls: int
    removed_bytes: int
    first_seen: float
    last_seen: float
    last_request: str | None = None  # the digest of the request counted last
    cut_request: str | None = None  # the digest of the request that made the newest cut

    def made_cut(self, request: str | None) -> bool:
        """Whether ``request`` (a digest `record` was given) is the one that made the newest
        cut: the conversation's handoff, as opposed to a later request at the same cut."""
        return request is not None and request == self.cut_request

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "anchor": self.anchor,
            "requests": self.requests,
            "handoffs": self.handoffs,
            "removed_calls": self.removed_calls,
            "removed_bytes": self.removed_bytes,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }


class ConversationStore(Protocol):
    """Anchors and counters per conversation key."""

    url: str

    def get(self, key: str) -> ConversationState | None:
        """The state of a conversation, or None when it was never recorded."""
        ...

    def record(
        self,
        key: str,
        *,
        anchor: str | None = None,
        handoff: bool = False,
        removed_calls: int = 0,
        removed_bytes: int = 0,
        request: str | None = None,
    ) -> ConversationState:
        """Count one request (atomically; see the module docstring for what counts): a given
        ``anchor`` replaces the stored one; ``handoff``: the request was handed off at
        ``anchor``, which removed ``removed_calls`` and ``removed_bytes``; ``request``: a
        digest of the request as its client sent it."""
        ...

    def conversations(self) -> list[ConversationState]:
        """Every conversation, most recently seen first."""
        ...

    def close(self) -> None: ...


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not key or len(key) > 512 or any(ord(c) < 32 for c in key):
        raise InputError(
            f"conversation key: a printable string of 1 to 512 characters, got {key!r}"
        )
    return key


def request_digest(*parts: bytes | str) -> str:
    """The digest `ConversationStore.record` takes for a request: of its parts (route, body as
    the client sent it), so the same request sent again has the same digest."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()[:32]


def _check_request(request: str | None) -> str | None:
    if request is not None and (not isinstance(request, str) or not 0 < len(request) <= 128):
        raise InputError(f"request: a digest of 1 to 128 characters, got {request!r}")
    return request


def _check_count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name}: a count (0 or more), got {value!r}")
    return value


class MemoryConversations:
    """The reference backend: a dict under a lock."""

    url = "memory://"

    def __init__(self) -> None:
        self._rows: dict[str, ConversationState] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> ConversationState | None:
        with self._lock:
            return self._rows.get(_check_key(key))

    def record(
        self,
        key: str,
        *,
        anchor: str | None = None,
        handoff: bool = False,
        removed_calls: int = 0,
        removed_bytes: int = 0,
        request: str | None = None,
    ) -> ConversationState:
        _check_key(key)
        _check_count("removed_calls", removed_calls)
        _check_count("removed_bytes", removed_bytes)
        _check_request(request)
        now = time.time()
        with self._lock:
            old = self._rows.get(key) or ConversationState(
                key=key,
                anchor=None,
                requests=0,
                handoffs=0,
                removed_calls=0,
                removed_bytes=0,
                first_seen=now,
                last_seen=now,
            )
            if request is not None and request == old.last_request:  # sent again: counted
                new = replace(old, last_seen=max(now, old.last_seen))
            else:
                cut = handoff and is_new_cut(old.anchor, anchor)
                new = replace(
                    old,
                    anchor=anchor if anchor is not None else old.anchor,
                    requests=old.requests + 1,
                    handoffs=old.handoffs + int(cut),
                    removed_calls=old.removed_calls + (removed_calls if cut else 0),
                    removed_bytes=old.removed_bytes + (removed_bytes if cut else 0),
                    last_seen=max(now, old.last_seen),
                    last_request=request if request is not None else old.last_request,
                    cut_request=request if cut else old.cut_request,
                )
            self._rows[key] = new
            return new

    def conversations(self) -> list[ConversationState]:
        with self._lock:
            return sorted(self._rows.values(), key=lambda s: (-s.last_seen, s.key))

    def close(self) -> None:
        pass


_COLUMNS = (
    "key, anchor, requests, handoffs, removed_calls, removed_bytes, first_seen, last_seen,"
    " last_request, cut_request"
)
# The rules of `MemoryConversations.record` in one statement (every expression reads the row
# as it was): SENT_AGAIN, the request counted last sent again; NEW_CUT, a handoff at an anchor
# the conversation was not cut at (`is_new_cut`; ``excluded.handoffs`` is 1 only for a request
# handed off at an anchor). Neither is ever NULL, so a CASE on them never falls through.
_OLD = "wire_conversations"
_SENT_AGAIN = (
    f"(excluded.last_request IS NOT NULL AND {_OLD}.last_request IS NOT NULL"
    f" AND {_OLD}.last_request = excluded.last_request)"
)
_NEW_CUT = (
    f"(excluded.handoffs = 1 AND ({_OLD}.anchor IS NULL OR {_OLD}.anchor <> excluded.anchor)"
    f" AND NOT {_SENT_AGAIN})"
)
_UPSERT = (
    f"INSERT INTO wire_conversations ({_COLUMNS}) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET"
    f" anchor = CASE WHEN {_SENT_AGAIN} THEN {_OLD}.anchor"
    f" ELSE COALESCE(excluded.anchor, {_OLD}.anchor) END,"
    f" requests = {_OLD}.requests + CASE WHEN {_SENT_AGAIN} THEN 0 ELSE 1 END,"
    f" handoffs = {_OLD}.handoffs + CASE WHEN {_NEW_CUT} THEN 1 ELSE 0 END,"
    f" removed_calls = {_OLD}.removed_calls"
    f" + CASE WHEN {_NEW_CUT} THEN excluded.removed_calls ELSE 0 END,"
    f" removed_bytes = {_OLD}.removed_bytes"
    f" + CASE WHEN {_NEW_CUT} THEN excluded.removed_bytes ELSE 0 END,"
    f" cut_request = CASE WHEN {_NEW_CUT} THEN excluded.last_request ELSE {_OLD}.cut_request END,"
    f" last_request = COALESCE(excluded.last_request, {_OLD}.last_request),"
    f" last_seen = CASE WHEN excluded.last_seen > {_OLD}.last_seen"
    f" THEN excluded.last_seen ELSE {_OLD}.last_seen END"
    f" RETURNING {_COLUMNS}"
)


class SqlConversations:
    """The SQL backend, one set of statements over SQLite and PostgreSQL."""

    def __init__(self, url: str) -> None:
        from ipse.store._open import open_backend, sqlite_path

        ensure_registered()
        open_backend(url).close()  # applies every pending migration step, this component's too
        self._lock = threading.Lock()  # one connection, shared by a proxy's worker threads
        self._pg: PostgresConnection | None = None
        self._sqlite: SqliteConnection | None = None
        if url.startswith("sqlite:"):
            self._sqlite = SqliteConnection(sqlite_path(url), shared_across_threads=True)
            self.url = f"sqlite:///{sqlite_path(url)}"
        else:
            self._pg = PostgresConnection(url)
            self.url = redact(url)

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        with self._lock:
            if self._sqlite is not None:
                with self._sqlite.write() as cur:
                    yield cur
            else:
                assert self._pg is not None
                with self._pg.transaction() as cur:
                    yield _Placeholders(cur)

    def get(self, key: str) -> ConversationState | None:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {_COLUMNS} FROM wire_conversations WHERE key = ?", (_check_key(key),)
            )
            row = cur.fetchone()
        return None if row is None else _state(row)

    def record(
        self,
        key: str,
        *,
        anchor: str | None = None,
        handoff: bool = False,
        removed_calls: int = 0,
        removed_bytes: int = 0,
        request: str | None = None,
    ) -> ConversationState:
        _check_count("removed_calls", removed_calls)
        _check_count("removed_bytes", removed_bytes)
        cut = handoff and anchor is not None  # a new cut if the stored anchor differs
        params = (
            _check_key(key),
            anchor,
            int(cut),
            removed_calls if cut else 0,
            removed_bytes if cut else 0,
            time.time(),
            time.time(),
            _check_request(request),
            request if cut else None,
        )
        with self._cursor() as cur:
            cur.execute(_UPSERT, params)
            row = cur.fetchone()
        return _state(row)

    def conversations(self) -> list[ConversationState]:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {_COLUMNS} FROM wire_conversations ORDER BY last_seen DESC, key", ()
            )
            rows = cur.fetchall()
        return [_state(r) for r in rows]

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
        if self._pg is not None:
            self._pg.close()


class _Placeholders:
    """A psycopg cursor taking ``?`` placeholders."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any]) -> None:
        self._cur.execute(sql.replace("?", "%s"), tuple(params))

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cur.fetchall())


def _state(row: Sequence[Any]) -> ConversationState:
    key, anchor, requests, handoffs, calls, size, first, last, last_request, cut_request = row
    return ConversationState(
        key=str(key),
        anchor=None if anchor is None else str(anchor),
        requests=int(requests),
        handoffs=int(handoffs),
        removed_calls=int(calls),
        removed_bytes=int(size),
        first_seen=float(first),
        last_seen=float(last),
        last_request=None if last_request is None else str(last_request),
        cut_request=None if cut_request is None else str(cut_request),
    )


def open_conversations(url: str | None = None) -> ConversationStore:
    """Open (and migrate) the conversation store at ``url``; None means the default store."""
    from ipse.store._open import default_url

    url = url or default_url()
    if url in ("memory://", "memory:"):
        return MemoryConversations()
    if url.startswith(("sqlite:", "postgresql://", "postgres://")):
        return SqlConversations(url)
    raise InputError(
        f"store URL {redact(url)!r}: unknown scheme (use memory://, sqlite:///PATH or postgresql://...)"
    )


__all__ = [
    "COMPONENT",
    "STEPS",
    "ConversationState",
    "ConversationStore",
    "MemoryConversations",
    "SqlConversations",
    "ensure_registered",
    "open_conversations",
    "request_digest",
]
