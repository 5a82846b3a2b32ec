"""The archive's search index: built from an archive of an earlier schema when it opens, kept
without FTS5 (a scan that says so), and past a corrupt blob."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.archive import Caller, open_archive, search_items
from ipse.archive import _index as index_module
from ipse.archive._blobs import CODEC, address, compress
from ipse.archive._schema import ensure_registered
from ipse.archive._text import words
from ipse.archive.testing import QUERIES, Item, corpus, reference_search
from ipse.store import open_backend
from tests.support.sql import raw_exec


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ipse.db'}"
    return str(request.getfixturevalue("pg_url"))


def _insert_first_schema(url: str, items: tuple[Item, ...]) -> None:
    """``items`` written as ipse wrote them before the search index (schema step 1)."""
    ensure_registered()
    open_backend(url, upto={"archive": 1}).close()
    for position, item in enumerate(items):
        call = orjson.dumps(item.call)
        result = orjson.dumps(item.result) if item.result is not None else None
        for data in (call, result):
            if data is not None:
                raw_exec(
                    url,
                    "INSERT INTO archive_blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (address(data), CODEC, len(data), compress(data)),
                )
        raw_exec(
            url,
            "INSERT INTO archive_items (session, item_id, kind, tool, preview, size,"
            " call_sha256, result_sha256, position, source) VALUES (?, ?, ?, ?, '', 1, ?, ?, ?,"
            " 'old')",
            (
                "s1",
                item.id,
                item.kind,
                item.tool,
                address(call),
                address(result) if result is not None else None,
                position,
            ),
        )


def test_an_archive_of_the_first_schema_is_indexed_when_opened(url: str) -> None:
    stored = corpus()
    _insert_first_schema(url, stored)
    archive = open_archive(url)
    try:
        for query in QUERIES:
            found = search_items(archive, Caller("s1"), limit=20, **query).found.matches
            assert [m.item.id for m in found] == reference_search(query, stored), query
        # an item written after the migration is the same item, not a second one
        assert archive.put("s1", stored, "again") == 0
        assert [i.action for i in archive.items("s1")][:3] == ["read", "command", "edit"]
    finally:
        archive.close()


def test_without_fts5_a_search_reads_every_item_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'ipse.db'}"
    stored = corpus()
    monkeypatch.setattr(index_module, "fts5_available", lambda: False)
    index_module._warn_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger="ipse"):
        archive = open_archive(url)
        try:
            for item in stored:
                archive.put("s1", [item], "a")
            for query in QUERIES:
                answer = search_items(archive, Caller("s1"), limit=20, **query).found
                assert answer.method == "scan"
                assert [m.item.id for m in answer.matches] == reference_search(query, stored)
        finally:
            archive.close()
    assert any("no FTS5" in r.getMessage() for r in caplog.records)
    conn = sqlite3.connect(tmp_path / "ipse.db")
    assert conn.execute("SELECT count(*) FROM archive_items WHERE indexed = 0").fetchone() == (8,)
    conn.close()
    # a Python with FTS5 makes the index and fills it on opening
    monkeypatch.undo()
    archive = open_archive(url)
    try:
        answer = search_items(archive, Caller("s1"), query="KeyError").found
        assert answer.method == "fts5"
        assert [m.item.id for m in answer.matches] == reference_search(
            {"query": "KeyError"}, stored
        )
    finally:
        archive.close()
    conn = sqlite3.connect(tmp_path / "ipse.db")
    assert conn.execute("SELECT count(*) FROM archive_items WHERE indexed = 0").fetchone() == (0,)
    conn.close()


def test_a_corrupt_blob_leaves_its_item_listed_and_the_rest_indexed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ipse.db'}"
    stored = corpus()
    _insert_first_schema(url, stored)
    victim = address(orjson.dumps(stored[0].result))
    raw_exec(url, "UPDATE archive_blobs SET data = X'00' WHERE sha256 = ?", (victim,))
    archive = open_archive(url)
    try:
        assert len(archive.items("s1")) == len(stored)
        found = search_items(archive, Caller("s1"), query="lint").found.matches
        assert [m.item.id for m in found] == ["call_c"]
    finally:
        archive.close()


@dataclass(frozen=True)
class _Read:
    """A removed item that says what it did (as a handoff that reads calls closely may)."""

    kind: str
    id: str
    tool: str
    call: dict[str, Any]
    result: dict[str, Any] | None
    message: int
    action: str
    paths: tuple[str, ...]


def test_an_item_that_says_what_it_did_is_indexed_by_that(tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    call = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "make"}}
    said = _Read("tool", "c1", "Bash", call, None, 1, "edit", ("gen/out.c",))
    try:
        archive.put("s1", [said], "a")
        found = search_items(archive, Caller("s1"), path="out.c", kind="edit").found.matches
        assert [(m.item.id, m.item.paths) for m in found] == [("c1", ("gen/out.c",))]
    finally:
        archive.close()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fts5_holds_exactly_the_words_the_archive_finds(text: str) -> None:
    """The FTS5 table's tokenizer splits the archive's words no further and joins none: its
    vocabulary is the words (what PostgreSQL gets as lexemes), so both answer alike."""
    found = words(text)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='ascii')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        conn.execute("INSERT INTO t (x) VALUES (?)", (" ".join(found),))
        held = {str(r[0]) for r in conn.execute("SELECT term FROM v")}
    finally:
        conn.close()
    assert held == set(found)
