"""A session's thread as request messages (`request_thread`) is what writing the thread built
through the neutral model gives: message dicts, meta and warnings, on real sessions and on
generated record trees with hostile payloads; real sessions never need the neutral model."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.errors import InputError
from ipse.transcript._formats import claude_code_requests
from ipse.transcript._formats.anthropic import write_message
from ipse.transcript._formats.claude_code import ClaudeCodeSession, read_session, session_record
from ipse.transcript._formats.claude_code_requests import RequestThread, request_thread
from ipse.transcript._jsonl import JsonlRecord
from tests.conftest import CLAUDE_CODE, EXAMPLE_SESSION, needs_shared, shared_glob


def _through_neutral(session: ClaudeCodeSession, name: str) -> RequestThread:
    thread = session.thread(name)
    return RequestThread(
        thread.name,
        tuple(
            tuple(
                claude_code_requests.RequestMessage(write_message(m), m.meta)
                for m in segment.conversation.messages
            )
            for segment in thread.segments
        ),
    )


def _session(records: list[dict[str, Any]], path: Path = Path("s.jsonl")) -> ClaudeCodeSession:
    lines = [JsonlRecord(n, copy.deepcopy(r)) for n, r in enumerate(records, start=1)]
    return ClaudeCodeSession(path, [session_record(*r) for r in lines])


def _both(records: list[dict[str, Any]], name: str = "main") -> tuple[Any, Any]:
    """(the neutral model's answer, `request_thread`'s), each an exception's text when it
    raised, each with the warnings it gave."""
    answers = []
    for build in (_through_neutral, request_thread):
        session = _session(records)
        try:
            answer: Any = build(session, name)
        except InputError as exc:
            answer = f"InputError: {exc}"
        answers.append((answer, session.warnings))
    return answers[0], answers[1]


SESSIONS = [
    EXAMPLE_SESSION,
    *(needs_shared(p, id=p.name) for p in shared_glob(CLAUDE_CODE, "*.jsonl")),
]


@pytest.mark.parametrize("path", SESSIONS)
def test_real_sessions_give_what_the_neutral_model_writes(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = read_session(path).thread_names()
    for name in names:
        expected = read_session(path)
        wanted = _through_neutral(expected, name)

        def no_fallback(*args: Any) -> Any:
            raise AssertionError("a real session fell back to the neutral model")

        monkeypatch.setattr(ClaudeCodeSession, "thread", no_fallback)
        session = read_session(path)
        got = request_thread(session, name)
        monkeypatch.undo()
        assert got == wanted, name
        assert session.warnings == expected.warnings


# ------------------------------------------------------------------------ generated trees

_IDS = st.sampled_from(["toolu_1", "toolu_2", "toolu_3"])
_TEXT = st.sampled_from(["", "hi", "<system-reminder>x</system-reminder>", "a\u2028b"])
_ODD = st.one_of(st.none(), st.integers(0, 2), st.lists(st.integers(0, 1), max_size=1))


def _blocks(depth: int = 0) -> st.SearchStrategy[Any]:
    text = st.builds(lambda t: {"type": "text", "text": t}, st.one_of(_TEXT, _ODD))
    use = st.builds(
        lambda i, n: {"type": "tool_use", "id": i, "name": n, "input": {"a": 1}},
        st.one_of(_IDS, _IDS, _ODD),
        st.one_of(st.just("Bash"), _ODD),
    )
    result_content: st.SearchStrategy[Any] = st.one_of(_TEXT, st.none(), st.integers(0, 3))
    if depth < 1:
        result_content = st.one_of(result_content, st.lists(_blocks(depth + 1), max_size=2))
    result = st.builds(
        lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, **e},
        st.one_of(_IDS, _IDS, _ODD),
        result_content,
        st.sampled_from([{}, {"is_error": True}]),
    )
    absent = st.builds(lambda i: {"type": "tool_result", "tool_use_id": i}, _IDS)
    thinking = st.builds(
        lambda t, s: {"type": "thinking", "thinking": t, **s},
        st.one_of(_TEXT, _ODD),
        st.sampled_from([{}, {"signature": "sig"}, {"signature": None}, {"signature": 7}]),
    )
    other = st.sampled_from(
        [{"type": "image", "source": {}}, {"type": "redacted_thinking", "data": "x"}, {}]
    )
    return st.one_of(text, use, result, absent, thinking, other)


_BLOCK = _blocks()


@st.composite
def _content(draw: st.DrawFn) -> Any:
    """Mostly lists of blocks; now and then a string, null, or a list holding a value that is
    not a block (which the reader refuses: kept rare, so that most examples are read)."""
    form = draw(st.integers(0, 19))
    if form < 3:
        return draw(st.one_of(_TEXT, st.none()))
    if form == 3:
        return draw(st.one_of(st.integers(0, 1), st.lists(_ODD, min_size=1, max_size=1)))
    return draw(st.lists(_BLOCK, max_size=3))


@st.composite
def _records(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 14))):
        uuids = [r["uuid"] for r in records]
        parent = uuids[-1] if uuids else None  # mostly a chain, with branches and roots
        if uuids and draw(st.integers(0, 5)) == 0:
            parent = draw(st.one_of(st.sampled_from(uuids), st.none()))
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "assistant", "progress"]))
        if draw(st.integers(0, 9)) == 0:
            kind = "system"
        record: dict[str, Any] = {"type": kind, "uuid": f"u{n}", "parentUuid": parent}
        if kind == "system":
            record["subtype"] = draw(st.sampled_from(["compact_boundary", "informational"]))
        if kind in ("user", "assistant"):
            role: Any = draw(st.sampled_from([kind, kind, kind, "user", "user"]))
            if draw(st.integers(0, 29)) == 0:
                role = 5
            message: Any = {"role": role, "content": draw(_content())}
            if kind == "assistant":
                message["id"] = draw(st.sampled_from(["msg_a", "msg_a", "msg_b", None]))
                message["model"] = "claude-test"
                message["usage"] = draw(st.sampled_from([{"input_tokens": 1}, None]))
            if draw(st.integers(0, 19)) == 0:
                message = draw(st.sampled_from(["text", None, ["x"]]))
            record["message"] = message
            for key in ("isMeta", "requestRef", "timestamp"):
                if draw(st.booleans()):
                    record[key] = draw(st.sampled_from([True, "r1", "2026-01-01T00:00:00Z"]))
        records.append(record)
    return records


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records())
def test_generated_trees_give_what_the_neutral_model_writes(records: list[dict[str, Any]]) -> None:
    neutral, fast = _both(records)
    assert fast == neutral
    thread, _ = fast
    if isinstance(thread, RequestThread):  # well formed, as `SharedHistory.checked` trusts
        for message in (m.body for segment in thread.segments for m in segment):
            content = message["content"]
            assert isinstance(message["role"], str)
            assert isinstance(content, str) or (
                isinstance(content, list) and all(isinstance(b, dict) for b in content)
            ), message


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_use", "id": 7, "name": "Bash", "input": {}},
        {"type": "tool_use", "id": "toolu_1", "name": None, "input": {}},
        {"type": "tool_result", "tool_use_id": 3, "content": "ok"},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": 5},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "thinking"}]},
        {"type": "thinking", "thinking": "hm", "signature": 7},
        {"type": "thinking", "signature": "sig"},
    ],
)
def test_a_block_the_neutral_model_rewrites_is_written_as_it_writes_it(
    block: dict[str, Any],
) -> None:
    records: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": "u0",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "uuid": "u1",
            "parentUuid": "u0",
            "message": {"id": "m", "role": "assistant", "content": [block]},
        },
    ]
    neutral, fast = _both(records)
    assert fast == neutral
    (segment,) = fast[0].segments
    assert segment[1].body["content"] != [block]  # (rewritten: not the block as read)


def test_merged_parts_and_grouped_results_match_the_neutral_model() -> None:
    def assistant(uuid: str, parent: str, block: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "uuid": uuid,
            "parentUuid": parent,
            "message": {"id": "m1", "role": "assistant", "content": [block]},
        }

    def result(uuid: str, parent: str, call: str) -> dict[str, Any]:
        return {
            "type": "user",
            "uuid": uuid,
            "parentUuid": parent,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call}]},
        }

    use = {"type": "tool_use", "name": "Bash", "input": {}}
    records = [
        {
            "type": "user",
            "uuid": "u0",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        assistant("a1", "u0", {"type": "text", "text": "two calls"}),
        assistant("a2", "a1", {**use, "id": "c1"}),
        result("r1", "a2", "c1"),
        assistant("a3", "r1", {**use, "id": "c2"}),
        assistant("a4", "a3", {**use, "id": "c2"}),  # a copied record: its call is not doubled
        result("r2", "a4", "c2"),
    ]
    neutral, fast = _both(records)
    assert fast == neutral
    messages = fast[0].segments[0]
    assert [m.body["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b.get("id") for b in messages[1].body["content"]] == [None, "c1", "c2"]
    assert messages[1].meta["lines"] == [2, 3, 5, 6]


def test_the_fallback_is_taken_for_a_block_that_is_not_an_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    real = ClaudeCodeSession.thread

    def counted(self: ClaudeCodeSession, name: str = "main") -> Any:
        calls.append(name)
        return real(self, name)

    monkeypatch.setattr(ClaudeCodeSession, "thread", counted)
    records = [
        {
            "type": "user",
            "uuid": "u0",
            "parentUuid": None,
            "message": {"role": "user", "content": ["not a block"]},
        },
    ]
    neutral, fast = _both(records)
    assert fast == neutral
    assert str(fast[0]).startswith("InputError: ") and "not a JSON object" in str(fast[0])
    assert calls == ["main", "main"]  # the neutral answer, then the fallback


def _part(uuid: str, parent: str, role: str, content: Any) -> dict[str, Any]:
    """An assistant record (one part of response ``msg_a``) holding a message of ``role``."""
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "message": {"id": "msg_a", "role": role, "content": content},
    }


_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1"}
_OPENING = {
    "type": "user",
    "uuid": "u0",
    "parentUuid": None,
    "message": {"role": "user", "content": "go"},
}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # merged, the message keeps its first part's role: not a message of tool results
        (("assistant", []), ("user", [_RESULT])),
        # a message of tool results no longer, once a text part joins it
        (("user", [_RESULT]), ("user", "a text")),
    ],
)
def test_merged_parts_decide_whether_the_next_results_join_as_the_neutral_model_does(
    first: tuple[str, Any], second: tuple[str, Any]
) -> None:
    records = [
        _OPENING,
        _part("u1", "u0", *first),
        _part("u2", "u1", *second),
        {
            "type": "user",
            "uuid": "u3",
            "parentUuid": "u2",
            "message": {"role": "user", "content": [_RESULT]},
        },
    ]
    neutral, fast = _both(records)
    assert fast == neutral
    assert len(fast[0].segments[0]) == 3  # the last results stand alone


def test_a_response_written_as_many_records_is_one_message_with_every_part() -> None:
    """Claude Code writes each block of a response as a record of its own, with each call's
    result between: all of them join one message (in place, record by record), a copied
    record's call is not added twice, and the results gather into the next message."""
    records: list[dict[str, Any]] = [_OPENING]
    parent = "u0"
    for n in range(400):
        call = {"type": "tool_use", "id": f"toolu_{n % 399}", "name": "Bash", "input": {"n": n}}
        records.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "parentUuid": parent,
                "message": {"id": "msg_a", "role": "assistant", "content": [call]},
            }
        )
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": str(n)}
        records.append(
            {
                "type": "user",
                "uuid": f"r{n}",
                "parentUuid": f"a{n}",
                "message": {"role": "user", "content": [result]},
            }
        )
        parent = f"r{n}"
    neutral, fast = _both(records)
    assert fast == neutral
    (segment,) = fast[0].segments
    _, response, results = segment
    assert [b["input"]["n"] for b in response.body["content"]] == list(range(399))
    assert response.meta["uuids"] == [f"a{n}" for n in range(400)]
    assert len(results.body["content"]) == 400  # (the copied call's result is its own)
    session = _session(records)
    request_thread(session)  # merging extends the message's own lists, not the records'
    assert all(len(r.data["message"]["content"]) == 1 for r in session.records[1:])
