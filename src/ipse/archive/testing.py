"""The conformance suite every archive backend passes (SQLite and PostgreSQL here).

Each check is a plain function taking a fresh, empty `ArchiveStore` and raising
`AssertionError` when the archive breaks its contract; the items are built here, so the suite
needs no recorded session. With pytest, parametrize over `CHECKS` (see ``ipse.store.testing``).

The search checks hold every backend to the same answers: the items asked for, in the same
order (every word in the call first, then the rest; newest first within each), and the same
answer as `reference_search`, the search computed in Python from each item's words
(`ipse.archive._index.matches`), for every query of `QUERIES` over `corpus`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ipse.archive._base import ArchiveStore
from ipse.archive._index import Ask, document, matches
from ipse.archive._lookup import list_items, recall_item, search_items
from ipse.archive._scope import Caller
from ipse.archive._text import query_words, words
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


def _use(item_id: str, name: str, args: Mapping[str, Any], output: str, at: int) -> Item:
    """An Anthropic tool call and its result."""
    call = {"type": "tool_use", "id": item_id, "name": name, "input": dict(args)}
    result = {"type": "tool_result", "tool_use_id": item_id, "content": output}
    return Item(kind="tool", id=item_id, tool=name, call=call, result=result, message=at)


def corpus() -> tuple[Item, ...]:
    """Items of every action and dialect, in the order they are archived (one put each)."""
    chat = {
        "id": "call_c",
        "type": "function",
        "function": {"name": "shell", "arguments": '{"command": ["bash", "-lc", "make lint"]}'},
    }
    responses = {
        "type": "function_call",
        "call_id": "call_r",
        "name": "read_file",
        "arguments": '{"path": "docs/Guide.md"}',
    }
    patch = "*** Begin Patch\n*** Update File: src/app/main.py\n@@\n-old\n+new\n*** End Patch"
    return (
        _use("r1", "Read", {"file_path": "/repo/src/app/config.py"}, "def parse_config(p):", 1),
        _use("b1", "Bash", {"command": "pytest tests/test_config.py -q"}, "1 failed: KeyError", 2),
        _use(
            "e1",
            "Edit",
            {"file_path": "src/app/config.py", "old_string": "p", "new_string": "q"},
            "ok",
            3,
        ),
        Item(
            kind="thinking",
            id="t1",
            tool="thinking",
            message=4,
            result=None,
            call={"type": "thinking", "thinking": "The KeyError comes from parse_config"},
        ),
        Item(
            kind="tool",
            id="call_c",
            tool="shell",
            call=chat,
            message=5,
            result={"role": "tool", "tool_call_id": "call_c", "content": "lint clean"},
        ),
        Item(
            kind="tool",
            id="call_r",
            tool="read_file",
            call=responses,
            message=6,
            result={
                "type": "function_call_output",
                "call_id": "call_r",
                "output": "Guide: ÜBER café",
            },
        ),
        _use("p1", "apply_patch", {"input": patch}, "Done!", 7),
        _use("g1", "Grep", {"pattern": "KeyError", "path": "src"}, "src/app/config.py:3", 8),
    )


QUERIES: tuple[dict[str, str], ...] = (
    {"query": "parse_config"},
    {"query": "keyerror"},
    {"query": "KeyError parse"},
    {"query": "config"},
    {"query": "über CAFÉ"},
    {"query": "lint"},
    {"query": "nowhere-at-all"},
    {"path": "src/app/config.py"},
    {"path": "config.py"},
    {"path": "app"},
    {"path": "/repo/src"},
    {"path": "docs/Guide.md"},
    {"path": "main.py", "kind": "edit"},
    {"kind": "read"},
    {"kind": "edit"},
    {"kind": "command"},
    {"kind": "other"},
    {"query": "config", "kind": "read"},
    {"query": "failed", "path": "tests"},
)
"""The queries every backend answers as `reference_search` does."""


def reference_search(query: Mapping[str, str], stored: tuple[Item, ...]) -> list[str]:
    """The ids a search finds among ``stored`` (archived in that order, one session), computed
    from each item's words in Python: every word in the call first, then the rest, newest
    first within each."""
    from ipse.archive._facets import path_needle

    text, path = query.get("query"), query.get("path")
    ask = Ask(
        words=tuple(query_words(text)) if text else (),
        path=path,
        path_words=tuple(words(path)) if path else (),
        action=query.get("kind"),
    )
    first, rest = [], []
    for item in reversed(stored):
        doc = document("", item.kind, item.tool, item.call, item.result)
        if path and not any(path_needle(path) in f"/{p.strip('/')}/" for p in doc.paths):
            continue
        if matches(doc, Ask(ask.words, ask.path, ask.path_words, ask.action, call_only=True)):
            first.append(item.id)
        elif ask.words and matches(doc, ask):
            rest.append(item.id)
    return first + rest


def _caller(session: str = "s1") -> Caller:
    return Caller(session=session)


def check_search_answers_as_the_reference(archive: ArchiveStore) -> None:
    stored = corpus()
    for item in stored:
        archive.put("s1", [item], "a")
    archive.put("s2", stored, "b")  # another session: never in s1's answers
    for query in QUERIES:
        found = search_items(archive, _caller(), limit=20, **query).found.matches
        got = [m.item.id for m in found]
        assert got == reference_search(query, stored), (query, got)
        assert all(m.item.session == "s1" for m in found)


def check_search_orders_call_matches_first(archive: ArchiveStore) -> None:
    stored = corpus()
    for item in stored:
        archive.put("s1", [item], "a")
    found = search_items(archive, _caller(), query="KeyError").found.matches
    assert [(m.item.id, m.found_in) for m in found] == [
        ("g1", "call"),
        ("t1", "call"),
        ("b1", "output"),
    ]
    assert "KeyError" in found[2].excerpt and found[0].item.action == "read"
    assert found[0].item.paths == ("src",)
    limited = search_items(archive, _caller(), query="config", limit=2).found.matches
    assert [m.item.id for m in limited] == ["t1", "e1"]


def check_search_and_listing_keep_to_the_scope(archive: ArchiveStore) -> None:
    stored = corpus()
    archive.put("session:s1", stored[:2], "a")
    archive.put("session:s2", stored[2:4], "b")
    archive.put("other", stored[:4], "c")
    archive.add_project("session:s1", "/work/p")
    archive.add_project("session:s2", "/work/p")
    me = Caller(session="session:s1", project="/work/p")
    assert _ids(search_items(archive, me, query="config").found.matches) == ["r1", "b1"]
    project = search_items(archive, me, query="config", scope="project").found.matches
    assert sorted((m.item.session, m.item.id) for m in project) == [
        ("session:s1", "b1"),
        ("session:s1", "r1"),
        ("session:s2", "e1"),
        ("session:s2", "t1"),
    ]
    everywhere = search_items(archive, me, query="config", scope="all").found.matches
    assert {m.item.session for m in everywhere} == {"session:s1", "session:s2", "other"}
    assert _ids(list_items(archive, me).items) == ["r1", "b1"]  # newest first
    nobody = Caller(project="/elsewhere")
    assert search_items(archive, nobody, query="config").found.matches == ()
    with raises(UsageError, match="no session is known"):
        search_items(archive, Caller(), query="config")


def check_recall_looks_in_the_session_then_the_project(archive: ArchiveStore) -> None:
    stored = corpus()
    archive.put("session:s1", stored[:1], "a")
    archive.put("session:s2", stored[1:2], "b")
    archive.put("stranger", stored[2:3], "c")
    archive.add_project("session:s1", "/work/p")
    archive.add_project("session:s2", "/work/p")
    me = Caller(session="session:s1", project="/work/p")
    assert recall_item(archive, me, "r1").item.session == "session:s1"
    assert recall_item(archive, me, "b1").item.session == "session:s2"  # same project
    with raises(InputError, match="scope all looks in every session"):
        recall_item(archive, me, "e1")  # another user's session: not without asking
    assert recall_item(archive, me, "e1", scope="all").item.session == "stranger"
    assert recall_item(archive, Caller(), "e1", session="stranger").item.id == "e1"


def check_bare_session_ids_name_the_session(archive: ArchiveStore) -> None:
    stored = corpus()
    archive.put("session:f0a5c3d2-uuid", stored[:2], "a")
    archive.put("plain-name", stored[2:3], "b")
    for name in ("f0a5c3d2-uuid", "session:f0a5c3d2-uuid", "f0a5c3d2"):
        assert [i.id for i in archive.items(name)] == ["r1", "b1"], name
        assert archive.recall("r1", name).item.session == "session:f0a5c3d2-uuid"
        assert _ids(search_items(archive, Caller(), session=name, query="config").found.matches)
    assert [i.id for i in archive.items("session:plain-name")] == ["e1"]
    # a writer that named the session bare and one that named its key: one session
    archive.put("f0a5c3d2-uuid", stored[3:4], "d")
    assert [i.id for i in archive.items("f0a5c3d2-uuid")] == ["r1", "b1", "t1"]
    assert _ids(list_items(archive, Caller(session="session:f0a5c3d2-uuid")).items) == [
        "t1",
        "r1",
        "b1",
    ]
    archive.put("session:f0a5c3d2-other", stored[:1], "c")
    with raises(UsageError, match="several sessions"):
        archive.items("f0a5c3d2")


def check_two_items_under_one_session_and_id_are_kept_apart(archive: ArchiveStore) -> None:
    """Two conversations under one session key (no session header, the same start), each with
    a call ``toolu_1`` that read another file: the second's output is archived too, and the id
    alone gives neither (which is whose cannot be told); each full id gives its own."""
    mine = _use("toolu_1", "Read", {"file_path": "a.txt"}, "alice's secret", 1)
    theirs = _use("toolu_1", "Read", {"file_path": "a.txt"}, "bob's secret", 1)
    assert archive.put("hash:abc", [mine], "proxy") == 1
    assert archive.put("hash:abc", [theirs], "proxy") == 1
    listed = archive.items("hash:abc")
    assert len(listed) == 2 and all(i.id.startswith("toolu_1@") for i in listed)
    with raises(UsageError, match="different items"):
        archive.recall("toolu_1", "hash:abc")
    with raises(UsageError, match="different items"):
        recall_item(archive, Caller(session="hash:abc"), "toolu_1")
    outputs = {archive.recall(i.id, "hash:abc").result for i in listed}
    assert outputs == {orjson.dumps(mine.result), orjson.dumps(theirs.result)}
    found = search_items(archive, Caller(session="hash:abc"), query="secret").found.matches
    assert sorted(m.item.id for m in found) == sorted(i.id for i in listed)


def check_an_item_sent_again_in_another_envelope_is_one_item(archive: ArchiveStore) -> None:
    """The same call read from the wire and from a transcript that adds its own metadata, or
    sent again with a cache breakpoint moved, is stored once."""
    first = _use("toolu_1", "Read", {"file_path": "a.txt"}, "text", 1)
    again = Item(
        kind="tool",
        id="toolu_1",
        tool="Read",
        call={**(first.call or {}), "cache_control": {"type": "ephemeral"}},
        result={**(first.result or {}), "metadata": {"turn_id": "t-9"}},
        message=1,
    )
    assert archive.put("s1", [first], "proxy") == 1
    assert archive.put("s1", [again], "transcript") == 0
    assert archive.recall("toolu_1", "s1").call == orjson.dumps(first.call)


def check_a_unique_id_prefix_names_the_item(archive: ArchiveStore) -> None:
    """An id no item has is read as the start of one: unique in the scope, it gives that item;
    shared by several ids, it is refused naming them; shorter than six characters, it is no
    prefix; an exact id wins over the ids it starts."""
    archive.put("s1", [_use(i, "Read", {"file_path": f"{i}.txt"}, i, 1) for i in _PREFIXED], "a")
    archive.put("s2", [_use("toolu_01Zz", "Read", {"file_path": "z.txt"}, "z", 1)], "b")
    assert archive.recall("toolu_01Ab", "s1").item.id == "toolu_01AbC9"
    assert archive.recall("toolu_01X", "s1").item.id == "toolu_01X"
    with raises(UsageError, match="toolu_01XyQ.*toolu_01XyR"):
        archive.recall("toolu_01Xy", "s1")
    with raises(InputError, match="no archived item"):
        archive.recall("toolu_01Zz", "s1")
    with raises(InputError, match="no archived item"):
        archive.recall("toolu", "s1")
    assert recall_item(archive, _caller("s1"), "toolu_01Ab").item.id == "toolu_01AbC9"


_PREFIXED = ("toolu_01AbC9", "toolu_01X", "toolu_01XyQ", "toolu_01XyR")


def _ids(found: Any) -> list[str]:
    return [m.item.id if hasattr(m, "item") else m.id for m in found]


CHECKS: tuple[Check, ...] = (
    check_recall_gives_back_byte_equal_json,
    check_put_is_idempotent_and_listing_is_ordered,
    check_same_id_in_two_sessions_needs_a_session,
    check_unknown_item_is_an_input_error,
    check_preview_is_one_short_line,
    check_ids_that_escape_alike_stay_apart,
    check_search_answers_as_the_reference,
    check_search_orders_call_matches_first,
    check_search_and_listing_keep_to_the_scope,
    check_recall_looks_in_the_session_then_the_project,
    check_bare_session_ids_name_the_session,
    check_two_items_under_one_session_and_id_are_kept_apart,
    check_an_item_sent_again_in_another_envelope_is_one_item,
    check_a_unique_id_prefix_names_the_item,
)
"""Every check, in order; each takes a fresh, empty archive."""


# A backend's suite; the corpus, the queries and the reference search are its own.
__all__ = ["CHECKS", "Check"]
