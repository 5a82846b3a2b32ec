"""The archive's keys: two conversations filed under one session key keep both their items (and
the id alone gives neither), and a session is found by its bare harness id as by its key."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ipse.archive import open_archive
from ipse.archive.testing import Item
from ipse.errors import UsageError


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ipse.db'}"
    return str(request.getfixturevalue("pg_url"))


def _read(item_id: str, output: str) -> Item:
    return Item(
        kind="tool",
        id=item_id,
        tool="Read",
        call={"type": "tool_use", "id": item_id, "name": "Read", "input": {"file_path": "a"}},
        result={"type": "tool_result", "tool_use_id": item_id, "content": output},
        message=1,
    )


def test_two_conversations_under_one_key_keep_both_outputs(url: str) -> None:
    """No session header, the same system prompt and first message, the same tool-call id: the
    second conversation's output used to be dropped (the insert kept the first row), and the
    id recalled the first conversation's output for both."""
    archive = open_archive(url)
    try:
        assert archive.put("hash:0f", [_read("toolu_1", "alice's file")], "proxy") == 1
        assert archive.put("hash:0f", [_read("toolu_1", "bob's file")], "proxy") == 1
        with pytest.raises(UsageError, match="different items"):
            archive.recall("toolu_1", "hash:0f")
        full = [i.id for i in archive.items("hash:0f")]
        got = {orjson.loads(archive.recall(i, "hash:0f").result or b"")["content"] for i in full}
        assert got == {"alice's file", "bob's file"}
    finally:
        archive.close()


def test_a_bare_session_id_names_the_session(url: str) -> None:
    archive = open_archive(url)
    try:
        archive.put("session:f0a5c3d2-1111", [_read("toolu_1", "x")], "proxy")
        assert [i.id for i in archive.items("f0a5c3d2-1111")] == ["toolu_1"]
        assert archive.recall("toolu_1", "f0a5c3d2-1111").item.session == "session:f0a5c3d2-1111"
    finally:
        archive.close()
