"""Reachable: which facts missing from a context a ``recall`` query formed from that context finds.

Everything a handoff removes is archived, so "recallable" would be true by construction; what
matters is whether the agent, reading only its context, can ask for it. The probe answers that
with the real archive: each context that has an archive (ipse's handoff: what it removed and the
narration a budget paged out; the agent CLI's summary: the transcript it names) is put into a
scratch SQLite archive made for the probe run, and the queries its text gives are asked through
the same library calls ``ipse recall`` and the MCP server's ``recall`` make (`recall_item`,
`search_items`, five matches each). A demanded fact not in the context is *reachable* when one
item those queries return holds it, as written, in its call or its output.

The queries, formed from the context's text alone, never from the fact (`queries`):

- ``id``: every id the text shows for recall: a word in square brackets (the ledger's
  ``[toolu_...]``, a breadcrumb's ``[...; recall ID]``), or after ``recall`` or ``id``;
- ``path``: every path the text names, the file of every ``file:line``, and the folder holding
  each (``recall --path``);
- ``grep``: the words of every path, of every span in backticks (the ledger's commands,
  identifiers the agent wrote), of every test name, error name and URL (``recall --grep``, its
  first 32 words).

A grep over the transcript a summary names is given the same credit only through the same
rule: the transcript's tool exchanges and each message's text become items of the scratch
archive, searched with the queries the summary's text gives.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipse import jsonio
from ipse.errors import IpseError
from ipse.handoff._shared import strings
from ipse.probe._facts import SessionFact
from ipse.probe._grit import grit

if TYPE_CHECKING:
    from ipse.archive._shared import Archivable, ArchiveStore

TOP = 5  # matches a query returns (a fact counts only when one of them holds it)
MAX_WORDS = 32  # words of a grep query (the archive's limit)
SOURCE = "ipse probe"

_ID = re.compile(r"(?:\[|\brecall |\bid )([A-Za-z0-9][\w.:@-]{5,199})(?=[\]\s),;]|$)")
_GREP = ("identifier", "test", "error", "url")
_LINE = re.compile(r":\d+(?::\d+)?$")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True, order=True)
class Query:
    """One recall query: by ``id``, by ``path`` or by words (``grep``)."""

    kind: str
    value: str


@dataclass(frozen=True, slots=True)
class Reached:
    """What a context's queries found: the missing facts they reach, and how many they were."""

    facts: tuple[SessionFact, ...]
    queries: int
    items: int  # distinct items the queries returned


def queries(text: str) -> list[Query]:
    """The recall queries a context's text gives (see the module), sorted, without repeats."""
    found: set[Query] = {Query("id", m.group(1)) for m in _ID.finditer(text)}
    for sub, value in grit(text, "agent"):
        if sub in ("path", "file_line"):
            path = _LINE.sub("", value) if sub == "file_line" else value
            folder = path.rstrip("/").rpartition("/")[0]
            found.add(Query("path", path))
            if folder.strip("/.~"):
                found.add(Query("path", folder))
        if sub in ("path", *_GREP):
            words = _WORD.findall(value)[:MAX_WORDS]
            if words:
                found.add(Query("grep", " ".join(words)))
    return sorted(found)


def item_text(item: Archivable) -> str:
    """Every string an archived item holds, in its call and its output (a JSON string inside
    it read as well: a Responses call's arguments)."""
    parts: list[str] = []
    for value in (item.call, item.result):
        for text in strings(value):
            parts.append(text)
            if text.lstrip().startswith(("{", "[")):
                with contextlib.suppress(ValueError):
                    parts.extend(strings(jsonio.loads(text)))
    return "\n".join(parts)


class Reach:
    """A probe run's scratch archive (SQLite in a temporary folder, opened on first use): each
    context's items go in under a session of their own, and its queries are asked there."""

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._archive: ArchiveStore | None = None
        self._sessions = 0

    def __enter__(self) -> Reach:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()
            self._archive = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def _store(self) -> ArchiveStore:
        if self._archive is None:
            from ipse.archive import open_archive

            self._folder = tempfile.TemporaryDirectory(prefix="ipse-probe-")
            self._archive = open_archive(f"sqlite:///{Path(self._folder.name) / 'archive.db'}")
        return self._archive

    def measure(
        self, text: str, items: Sequence[Archivable], missing: Sequence[SessionFact]
    ) -> Reached:
        """The facts of ``missing`` that the queries of ``text`` reach among ``items``."""
        asked = queries(text)
        if not items or not missing:
            return Reached((), len(asked), 0)
        store = self._store()
        self._sessions += 1
        session = f"probe-{self._sessions}"
        store.put(session, items, SOURCE)
        returned = set(_returned(store, session, asked))
        texts = [item_text(i) for i in items if i.id in returned]
        reached = tuple(f for f in missing if any(f.value in t for t in texts))
        return Reached(reached, len(asked), len(returned))


def _returned(store: ArchiveStore, session: str, asked: Sequence[Query]) -> Iterator[str]:
    """The ids of the items each query returns (its top `TOP`); a query the archive refuses
    (no word in it, an id it does not hold) returns nothing."""
    from ipse.archive import Caller, recall_item, search_items

    caller = Caller(session=session)
    for query in asked:
        try:
            if query.kind == "id":
                yield recall_item(store, caller, query.value).item.id
                continue
            by: Mapping[str, Any] = (
                {"path": query.value} if query.kind == "path" else {"query": query.value}
            )
            searched = search_items(store, caller, limit=TOP, **by)
        except IpseError:
            continue
        yield from (m.item.id for m in searched.found.matches)


__all__ = ["MAX_WORDS", "TOP", "Query", "Reach", "Reached", "item_text", "queries"]
