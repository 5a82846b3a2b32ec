"""The conformance suite every archive backend passes (SQLite and PostgreSQL here).

Each check is a plain function taking a fresh, empty `ArchiveStore` and raising
`AssertionError` when the archive breaks its contract; the items are built here, so the suite
needs no recorded session. With pytest, parametrize over `CHECKS` (see ``ipse.store.testing``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ipse.archive._base import ArchiveStore
from ipse.errors import InputError, UsageError
from ipse.store.testing import raises

Check = Callable[[ArchiveStore], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    """A removed item with the shape the archive takes (`ipse.archive.Archivable`)."""

    kind: str
    id: str
    tool: str
    call: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    message: int


def items() -> tuple[Item, ...]:
    """Removed items of every kind, with unicode and a result shared by two calls."""
    shared = {"type": "tool_result", "content": "same output ✓"}
    bash = {"name": "bash", "input": {"cmd": "ls -la"}}
    read = {"name": "read", "input": {"path": "héllo.txt"}}
    grep = {"name": "grep", "input": {"q": "x" * 500}}
    thinking = {"type": "thinking", "thinking": "let me see"}
    return (
        Item(kind="tool", id="c1", tool="bash", call=bash, result=shared, message=1),
        Item(kind="tool", id="c2", tool="read", call=read, result=shared, message=3),
        Item(kind="tool", id="c0", tool="grep", call=grep, result=None, message=1),
        Item(kind="thinking", id="t1", tool="", call=thinking, result=None, message=2),
    )


def check_recall_gives_back_byte_equal_json(archive: ArchiveStore) -> None:
    removed = items()
    assert archive.put("s1", removed, "session.jsonl") == len(removed)
    for item in removed:
        recalled = archive.recall(item.id)
        assert recalled.call == orjson.dumps(item.call)
        expected = orjson.dumps(item.result) if item.result is not None else None
        assert recalled.result == expected
        assert (recalled.item.tool, recalled.item.kind) == (item.tool, item.kind)
        assert recalled.item.session == "s1"


def check_put_is_idempotent_and_listing_is_ordered(archive: ArchiveStore) -> None:
    removed = items()
    assert archive.put("s1", removed, "a") == len(removed)
    assert archive.put("s1", removed, "a") == 0
    listed = archive.items("s1")
    assert [i.id for i in listed] == [
        r.id for r in sorted(removed, key=lambda r: (r.message, r.id))
    ]
    assert all(i.size > 0 for i in listed)
    assert archive.sessions() == [("s1", len(removed))]
    assert archive.items("other") == []


def check_same_id_in_two_sessions_needs_a_session(archive: ArchiveStore) -> None:
    removed = items()
    archive.put("s1", removed, "a")
    archive.put("s2", removed, "b")
    with raises(UsageError, match="several sessions"):
        archive.recall("c1")
    assert archive.recall("c1", "s2").item.session == "s2"
    assert archive.sessions() == [("s1", len(removed)), ("s2", len(removed))]


def check_unknown_item_is_an_input_error(archive: ArchiveStore) -> None:
    with raises(InputError, match="no archived item"):
        archive.recall("missing")
    archive.put("s1", items(), "a")
    with raises(InputError, match="no archived item"):
        archive.recall("c1", "s2")


def check_preview_is_one_short_line(archive: ArchiveStore) -> None:
    archive.put("s1", items(), "a")
    previews = {i.id: i.preview for i in archive.items("s1")}
    assert previews["c1"] == "ls -la"
    assert previews["t1"] == "let me see"
    assert len(previews["c0"]) <= 80 and "\n" not in previews["c0"]


def check_ids_that_escape_alike_stay_apart(archive: ArchiveStore) -> None:
    """Ids a database can only store escaped (NUL, a lone surrogate) and ids holding those
    escapes as plain text are different items, each recalled as itself; keys with
    backslashes are found as given, and a listed escape finds its item."""
    ids = ("c\x00", "c\\x00", "c\ud800", "c\\ud800", "c\\", "c\\\\")
    removed = tuple(
        Item(kind="tool", id=i, tool="bash", call={"n": n}, result=None, message=n)
        for n, i in enumerate(ids)
    )
    session = "s\\1"
    assert archive.put(session, removed, "a") == len(ids)
    for item in removed:
        assert archive.recall(item.id).call == orjson.dumps(item.call), repr(item.id)
        assert archive.recall(item.id, session).item.session == session
    assert archive.sessions() == [(session, len(ids))]
    assert len(archive.items(session)) == len(ids)
    # what a listing shows for the NUL id (its escape) finds it when nothing else has that id
    archive.put("s2", removed[:1], "a")
    assert archive.recall("c\\x00", "s2").call == orjson.dumps({"n": 0})


CHECKS: tuple[Check, ...] = (
    check_recall_gives_back_byte_equal_json,
    check_put_is_idempotent_and_listing_is_ordered,
    check_same_id_in_two_sessions_needs_a_session,
    check_unknown_item_is_an_input_error,
    check_preview_is_one_short_line,
    check_ids_that_escape_alike_stay_apart,
)
"""Every check, in order; each takes a fresh, empty archive."""


__all__ = ["CHECKS", "Check", "Item", "items"]
