"""The archive's search index: what each item is indexed as, and how each database is asked.

An item is indexed as a `Doc`: the words of its call (tool name and arguments; a thinking
block's words), of the paths it named, and of its output (`ipse.archive._text`), its session's
token and its action (`ipse.archive._facets`). Every backend holds exactly those words and
answers an `Ask` (words, a path's words, an action) with the items holding all of them:

- SQLite: an FTS5 table (``archive_fts``: contentless, ``detail=column``, the ``ascii``
  tokenizer, which splits `words`' words no further) with one column per field. It is made when
  the archive opens, where this Python's SQLite has FTS5 (`fts5_available`); without FTS5 a
  search reads every item in scope and says so (`ScanIndex`, a warning on the ``ipse`` logger).
- PostgreSQL: ``archive_docs.terms``, a ``tsvector`` built from the words as lexemes
  (``array_to_tsvector``: no parser, no stemming), under a GIN index; a call's and a path's
  words also as ``h:word`` and ``p:word``, the action and the session as ``k:`` and ``s:``.

`SELECT`s are built here; the scope, the path test and the order are added by the archive.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ipse import _notes
from ipse.archive._facets import ACTIONS, facets
from ipse.archive._text import call_text, output_text, words

MAX_CALL_WORDS = 2_000
MAX_PATH_WORDS = 500
MAX_OUTPUT_WORDS = 8_000
_DOCS_PER_STATEMENT = 200

log = _notes.logger(__name__)


@dataclass(frozen=True, slots=True)
class Doc:
    """One item as the index holds it."""

    call: tuple[str, ...]
    path_words: tuple[str, ...]
    output: tuple[str, ...]
    session: str  # the session's token (`session_token`)
    action: str
    paths: tuple[str, ...] = ()  # the paths as the call named them


def document(
    session: str,
    kind: str,
    tool: str,
    call: Mapping[str, Any] | None,
    result: Any,
    given: tuple[str, tuple[str, ...]] | None = None,
) -> Doc:
    """The `Doc` of an item of ``session`` (its token) removed as ``kind`` from ``tool``;
    ``given``: what the call did and the paths it named, where the caller knows them (else
    `ipse.archive._facets.facets` reads them from the call)."""
    action, paths = given if given is not None else facets(kind, tool, call)
    return Doc(
        call=tuple(words(call_text(tool, call), MAX_CALL_WORDS)),
        path_words=tuple(words("\n".join(paths), MAX_PATH_WORDS)),
        output=tuple(words(output_text(result), MAX_OUTPUT_WORDS)),
        session=session,
        action=action,
        paths=paths,
    )


@dataclass(frozen=True, slots=True)
class Ask:
    """What a search asks for: all of ``words`` (in the call alone when ``call_only``), an item
    that named ``path`` (all of ``path_words`` among its paths' words, then the path itself,
    `ipse.archive._facets.path_needle`), and the ``action``."""

    words: tuple[str, ...] = ()
    path: str | None = None
    path_words: tuple[str, ...] = ()
    action: str | None = None
    sessions: tuple[str, ...] = ()  # tokens of the sessions in scope (any); () for any session
    call_only: bool = False


class SearchIndex(Protocol):
    """A backend's search index (one of the classes below)."""

    method: str  # how it searches, as answers report it
    indexes: bool  # whether items are written to it as they are stored
    order: str  # the column that orders its matches, newest last
    capped: bool  # whether `select` reads at most ``cap`` candidates (None: all)

    def add(self, cur: Any, docs: list[tuple[int, Doc]]) -> None: ...
    def select(self, ask: Ask, cap: int | None) -> tuple[str, list[Any]]: ...
    def contains(self, column: str) -> str: ...


def given_facets(item: Any) -> tuple[str, tuple[str, ...]] | None:
    """What a removed item says it did, when it says (``action``, one of `ACTIONS`, and
    ``paths``, a tuple of strings): a layer above that reads tool calls more closely than the
    archive gives its reading this way. None: the archive reads the call itself."""
    action, paths = getattr(item, "action", None), getattr(item, "paths", None)
    if action not in ACTIONS or not isinstance(paths, tuple):
        return None
    return str(action), tuple(str(p) for p in paths if isinstance(p, str))


def session_token(stored_session: str) -> str:
    """A session's token in the index: hex digits of its key's hash (fixed length, no escapes)."""
    return hashlib.sha256(stored_session.encode("utf-8")).hexdigest()[:24]


@functools.cache
def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (and its ``ascii`` tokenizer)."""
    import sqlite3

    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='ascii')")
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True


class Fts5Index:
    """SQLite's FTS5 table ``archive_fts``; rowid is the item's ``seq``."""

    method = "fts5"
    indexes = True
    order = "f.rowid"
    capped = False
    CREATE = (
        "CREATE VIRTUAL TABLE archive_fts USING fts5(head, paths, body, meta, content='',"
        " columnsize=0, detail='column', tokenize='ascii')"
    )

    def add(self, cur: Any, docs: list[tuple[int, Doc]]) -> None:
        cur.executemany(
            "INSERT INTO archive_fts (rowid, head, paths, body, meta) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    seq,
                    " ".join(doc.call),
                    " ".join(doc.path_words),
                    " ".join(doc.output),
                    f"s{doc.session} k{doc.action}",
                )
                for seq, doc in docs
            ],
        )

    def select(self, ask: Ask, cap: int | None = None) -> tuple[str, list[Any]]:
        """FROM and WHERE of the items matching ``ask`` (alias ``i``), newest first by ``seq``."""
        clauses = []
        if ask.words:
            columns = "{head paths}" if ask.call_only else "{head paths body}"
            clauses.append(f"{columns} : ({_all(ask.words, ' AND ')})")
        if ask.path_words:
            clauses.append(f"paths : ({_all(ask.path_words, ' AND ')})")
        if ask.action is not None:
            clauses.append(f'meta : "k{ask.action}"')
        if ask.sessions:
            clauses.append(f"meta : ({_all(tuple('s' + t for t in ask.sessions), ' OR ')})")
        return (
            "archive_fts f JOIN archive_items i ON i.seq = f.rowid WHERE archive_fts MATCH ?",
            [" AND ".join(clauses)],
        )

    @staticmethod
    def contains(column: str) -> str:
        return f"instr({column}, ?) > 0"


class TsvectorIndex:
    """PostgreSQL's ``archive_docs``: a ``tsvector`` of lexemes per item, under GIN."""

    method = "tsvector"
    indexes = True
    order = "i.seq"
    capped = True

    def add(self, cur: Any, docs: list[tuple[int, Doc]]) -> None:
        for start in range(0, len(docs), _DOCS_PER_STATEMENT):
            chunk = docs[start : start + _DOCS_PER_STATEMENT]
            marks = ", ".join(["(?, array_to_tsvector(?::text[]))"] * len(chunk))
            cur.execute(
                f"INSERT INTO archive_docs (seq, terms) VALUES {marks}",
                [v for seq, doc in chunk for v in (seq, lexemes(doc))],
            )

    def select(self, ask: Ask, cap: int | None = None) -> tuple[str, list[Any]]:
        """The newest ``cap`` items (None: all) whose lexemes answer ``ask``, joined to their
        rows: the GIN index finds them, the item numbers order them, and only those rows are
        read."""
        terms: list[str] = []
        prefix = "h:" if ask.call_only else ""
        terms.extend(f"'{prefix}{w}'" for w in ask.words)
        terms.extend(f"'p:{w}'" for w in ask.path_words)
        if ask.action is not None:
            terms.append(f"'k:{ask.action}'")
        if ask.sessions:
            terms.append("(" + " | ".join(f"'s:{t}'" for t in ask.sessions) + ")")
        return (
            "archive_items i JOIN (SELECT d.seq FROM archive_docs d WHERE d.terms @@ ?::tsquery"
            " ORDER BY d.seq DESC LIMIT ?) m ON m.seq = i.seq WHERE 1 = 1",
            [" & ".join(terms), cap],
        )

    @staticmethod
    def contains(column: str) -> str:
        return f"strpos({column}, ?) > 0"


class ScanIndex:
    """No index (SQLite without FTS5): a search reads every item in scope."""

    method = "scan"
    indexes = False
    order = "i.seq"
    capped = False

    def __init__(self) -> None:
        _warn_once()

    def add(self, cur: Any, docs: list[tuple[int, Doc]]) -> None:
        return None

    def select(self, ask: Ask, cap: int | None = None) -> tuple[str, list[Any]]:
        return "archive_items i WHERE 1 = 1", []

    @staticmethod
    def contains(column: str) -> str:
        return f"instr({column}, ?) > 0"


@functools.cache
def _warn_once() -> None:
    log.warning(
        "this Python's SQLite has no FTS5: archive searches read every item in scope, "
        "which is slow on a large archive (a Python whose sqlite3 has FTS5 indexes them)"
    )


def lexemes(doc: Doc) -> list[str]:
    """The lexemes of an item's ``tsvector``: its words, its call's and paths' words again as
    ``h:word``, its paths' words as ``p:word``, and ``k:action`` and ``s:session``."""
    found = set(doc.call) | set(doc.path_words) | set(doc.output)
    found.update(f"h:{w}" for w in (*doc.call, *doc.path_words))
    found.update(f"p:{w}" for w in doc.path_words)
    found.add(f"k:{doc.action}")
    found.add(f"s:{doc.session}")
    return list(found)


def matches(doc: Doc, ask: Ask) -> bool:
    """Whether ``doc`` answers ``ask`` (what the indexes compute, for `ScanIndex`)."""
    if ask.action is not None and doc.action != ask.action:
        return False
    if ask.path_words and not set(ask.path_words) <= set(doc.path_words):
        return False
    if ask.words:
        held = set(doc.call) | set(doc.path_words)
        if not ask.call_only:
            held |= set(doc.output)
        return set(ask.words) <= held
    return True


def _all(words: tuple[str, ...], joint: str) -> str:
    return joint.join(f'"{w}"' for w in words)


__all__ = [
    "MAX_CALL_WORDS",
    "MAX_OUTPUT_WORDS",
    "MAX_PATH_WORDS",
    "Ask",
    "Doc",
    "Fts5Index",
    "ScanIndex",
    "SearchIndex",
    "TsvectorIndex",
    "document",
    "fts5_available",
    "given_facets",
    "lexemes",
    "matches",
    "session_token",
]
