"""The archive: exact recall, content addressing, compression, listing, migrations, backends."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from ipse.archive import open_archive
from ipse.archive._base import ArchiveStore
from ipse.archive._blobs import CODEC, address, compress
from ipse.archive._schema import STEPS, ensure_registered
from ipse.archive.testing import CHECKS, Check, Item
from ipse.errors import InputError, StoreError, UsageError
from ipse.handoff import strip
from ipse.handoff._report import Removed
from ipse.store import open_backend
from ipse.transcript import load
from tests.conftest import BIG_SESSION, EXAMPLE_SESSION, OPENAI_TRAJ, needs_shared
from tests.support.sql import raw_exec


def _removed(path: Path = EXAMPLE_SESSION) -> tuple[Removed, ...]:
    return strip(load(path).current(), "now")[1].removed


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ipse.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def archive(url: str) -> Iterator[ArchiveStore]:
    store = open_archive(url)
    try:
        yield store
    finally:
        store.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_conformance(check: Check, archive: ArchiveStore) -> None:
    check(archive)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(EXAMPLE_SESSION, id="example"),
        needs_shared(BIG_SESSION, id="claude-code"),
        needs_shared(OPENAI_TRAJ, id="openai-chat"),
    ],
)
def test_recall_gives_back_byte_equal_originals(archive: ArchiveStore, path: Path) -> None:
    removed = _removed(path)
    assert archive.put("s1", removed, str(path)) == len(removed)
    for item in removed:
        recalled = archive.recall(item.id)
        assert item.call is not None
        assert recalled.call == orjson.dumps(item.call)
        assert orjson.loads(recalled.call) == item.call
        expected = orjson.dumps(item.result) if item.result is not None else None
        assert recalled.result == expected
        assert recalled.item.tool == item.tool and recalled.item.kind == item.kind


def test_put_is_idempotent_and_listing_is_ordered(archive: ArchiveStore) -> None:
    removed = _removed()
    assert archive.put("s1", removed, "a") == len(removed)
    assert archive.put("s1", removed, "a") == 0
    items = archive.items("s1")
    assert [i.id for i in items] == [r.id for r in sorted(removed, key=lambda r: (r.message, r.id))]
    assert all(i.size > 0 and i.preview is not None for i in items)
    assert archive.sessions() == [("s1", len(removed))]
    assert archive.items("other") == []


def test_same_id_in_two_sessions_needs_a_session(archive: ArchiveStore) -> None:
    removed = _removed()
    archive.put("s1", removed, "a")
    archive.put("s2", removed, "b")
    with pytest.raises(UsageError, match="several sessions"):
        archive.recall(removed[0].id)
    assert archive.recall(removed[0].id, "s2").item.session == "s2"
    with pytest.raises(InputError, match="no archived item"):
        archive.recall("missing")


def test_blobs_are_content_addressed_compressed_and_checked(tmp_path: Path) -> None:
    db = tmp_path / "ipse.db"
    store = open_archive(f"sqlite:///{db}")
    removed = _removed()
    store.put("s1", removed, "a")
    store.put("s2", removed, "b")
    store.close()
    conn = sqlite3.connect(db)
    blobs = conn.execute("SELECT sha256, size, length(data) FROM archive_blobs").fetchall()
    payloads = {orjson.dumps(r.call) for r in removed if r.call is not None}
    payloads |= {orjson.dumps(r.result) for r in removed if r.result is not None}
    assert len(blobs) == len(payloads)  # stored once, whatever the sessions
    assert {sha for sha, _, _ in blobs} == {address(p) for p in payloads}
    assert sum(n for _, _, n in blobs) < sum(size for _, size, _ in blobs)
    steps = conn.execute(
        "SELECT component, step, name FROM ipse_migrations WHERE component = 'archive'"
    )
    assert steps.fetchall() == [("archive", s.number, s.name) for s in STEPS]
    victim = removed[0].id
    conn.execute(
        "UPDATE archive_blobs SET data = X'00' WHERE sha256 = "
        "(SELECT call_sha256 FROM archive_items WHERE item_id = ? AND session = 's1')",
        (victim,),
    )
    conn.commit()
    conn.close()
    store = open_archive(f"sqlite:///{db}")
    with pytest.raises(StoreError, match="corrupt"):
        store.recall(victim, "s1")
    store.close()


def test_keys_written_by_the_first_schema_are_found_after_the_second(url: str) -> None:
    """Step 2 doubles the backslashes of the stored keys, and so keys that differ only in
    them (a copy in place would make one the other halfway) stay two items."""
    ensure_registered()
    open_backend(url, upto={"archive": 1}).close()
    blob = orjson.dumps({"name": "bash"})
    raw_exec(
        url,
        "INSERT INTO archive_blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?)",
        (address(blob), CODEC, len(blob), compress(blob)),
    )
    keys = [("C:\\work\\s", "a\\b"), ("C:\\work\\s", "a\\\\b"), ("plain", "c1")]
    for position, (session, item_id) in enumerate(keys):
        raw_exec(
            url,
            "INSERT INTO archive_items (session, item_id, kind, tool, preview, size,"
            " call_sha256, position, source) VALUES (?, ?, 'tool', 'bash', '', 1, ?, ?, 'x')",
            (session, item_id, address(blob), position),
        )
    store = open_archive(url)
    try:
        for session, item_id in keys:
            recalled = store.recall(item_id, session)
            assert (recalled.item.session, recalled.item.id) == (session, item_id)
            assert recalled.call == blob
        assert store.sessions() == [("C:\\work\\s", 2), ("plain", 1)]
        # items written afterwards keep apart what the first schema would have merged
        added = [
            Item(kind="tool", id=i, tool="t", call={"id": i}, result=None, message=9)
            for i in ("c\x00", "c\\x00")
        ]
        assert store.put("plain", added, "y") == 2
        assert len(store.items("plain")) == 3
    finally:
        store.close()


def test_default_archive_lives_in_ipse_home() -> None:
    store = open_archive()
    assert store.url.endswith("ipse.db") and store.url.startswith("sqlite:///")
    assert Path(os.environ["IPSE_HOME"]) / "ipse.db" == Path(store.url[len("sqlite:///") :])
    store.close()


def test_memory_url_is_refused() -> None:
    with pytest.raises(InputError, match="archive needs"):
        open_archive("memory://")
