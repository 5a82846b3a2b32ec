"""The fast paths for journaled Claude Code requests (one shared history, each request's
breakpoints laid over it) and Codex rollouts (one shared input list) give exactly the
analysis of the straightforward path: every request a plain body with its own copy of the
messages, breakpoints placed, flattened whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.prefix import analyze, read_requests
from ipse.prefix._growing import SharedHistory
from ipse.prefix._hashing import Flattener
from ipse.prefix._requests import Request
from ipse.prefix._rules import rules
from ipse.transcript._formats import claude_code_journal as journal
from ipse.transcript._formats.codex import rollout_requests
from ipse.transcript._jsonl import read_jsonl
from tests.support.generated import Turn, journaled_records, rollout_records, write_jsonl
from tests.support.plain import plain_requests

_ODD_PATHS = [
    ["messages", 0, "content", 0],
    ["messages", 1, "content", 0],
    ["messages", -1, "content", 0],
    ["messages", -1, "content", -1],
    ["messages", -2, "content", -1],
    ["messages", 0, "content", -3],
    ["messages", -9, "content", 0],
    ["messages", 0, "content", 7],
    ["messages", 1],
    ["messages", 2, "content"],
    ["messages", 1, "content", 0, "content", 0],
    ["messages", True, "content", 0],
    ["messages", "x", "content", 0],
]
_TURN = st.builds(
    Turn,
    text=st.text(alphabet="ab {}\n", min_size=0, max_size=12),
    tool=st.booleans(),
    mode=st.sampled_from(["full", "full", "full", "delta", "unknown", "rewind", "edit"]),
    marks=st.lists(st.sampled_from(_ODD_PATHS), max_size=2),
    ttl=st.sampled_from([None, None, "1h"]),
    shape=st.sampled_from([0, 0, 0, 1]),
    system_mark=st.booleans(),
    blob=st.booleans(),
)


def _reference_journal(path: Path) -> dict[str, list[Any] | None]:
    """The messages of each journaled request, read the straightforward way: each request
    a copy of every message, breakpoints placed on the copy."""
    blobs: dict[str, Any] = {}
    out: dict[str, list[Any] | None] = {}
    previous: list[Any] | None = []
    for record in read_jsonl(path):
        data = record.data
        if data.get("type") == "api-request-blob":
            blobs[str(journal._key(data["hash"]))] = data["message"]
        elif data.get("type") == "api-request":
            keep, tail = data["keep"], data["tail"]
            messages: list[Any] | None
            if keep and (previous is None or keep > len(previous)):
                messages = None
            else:
                messages = [journal._without_cache_control(m) for m in (previous or [])[:keep]]
                for item in tail:
                    blob = blobs.get(str(journal._key(item)))
                    if blob is None:
                        messages = None
                        break
                    messages.append(journal._without_cache_control(blob))
                messages = messages or None
            if messages is not None:
                journal._place_breakpoints({"messages": messages}, data["cacheControl"], "messages")
            out[data["id"]] = previous = messages
    return out


def _same_analysis(fast: list[Request], provider: str) -> None:
    plain = plain_requests(fast)
    one, other = Flattener(rules(provider)), Flattener(rules(provider))
    for a, b in zip(plain, fast, strict=True):
        x, y = one.flatten(a.body), other.flatten(b.body)
        for name in ("hashes", "chain", "cum", "ttls", "where", "groups", "marks"):
            assert list(getattr(x, name)) == list(getattr(y, name)), name
        for name in ("model", "settings", "setting_names", "tail", "messages", "breakpoints"):
            assert getattr(x, name) == getattr(y, name), name
    for tokenizer in ("auto", "bytes"):
        expected = analyze(plain, tokenizer=tokenizer).to_json()
        assert analyze(fast, tokenizer=tokenizer).to_json() == expected


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(turns=st.lists(_TURN, min_size=1, max_size=9))
def test_journaled_session_gives_the_same_analysis(tmp_path: Path, turns: list[Turn]) -> None:
    path = tmp_path / "session.jsonl"
    write_jsonl(path, journaled_records(turns))
    reference = _reference_journal(path)
    read = journal.read_journal(list(read_jsonl(path)))
    assert {k: v.messages for k, v in read.items()} == reference
    fast = read_requests(path).requests
    _same_messages_one_by_one(fast)
    _same_analysis(fast, "anthropic")


def _same_messages_one_by_one(requests: list[Request]) -> None:
    """What a shared history gives message by message (the causes ask so) is its list."""
    for request in requests:
        body = request.body
        if isinstance(body, SharedHistory):
            assert [body.message(i) for i in range(body.size)] == body["messages"]


def test_a_long_journaled_session_shares_one_history(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_jsonl(path, journaled_records([Turn(f"t{i}", tool=i % 2 == 1) for i in range(40)]))
    requests = read_requests(path).requests
    assert len(requests) == 40
    bases = {id(r.body.base) for r in requests if isinstance(r.body, SharedHistory)}
    assert len(bases) == 1
    assert all(isinstance(r.body, SharedHistory) and r.body.overlay for r in requests)
    _same_analysis(requests, "anthropic")


def test_requests_that_resend_a_message_changed_keep_the_history_shared(
    tmp_path: Path,
) -> None:
    """Each request sends the last message of the one before again, changed: the shared
    list is cut there and goes on, and the request before keeps that message as its own
    tail (one message each: the cost follows the journal, not its history squared)."""
    path = tmp_path / "session.jsonl"
    marks = [["messages", -2, "content", 0]]  # (the resent message had a string content)
    turns = [Turn(f"t{i}", mode="edit", marks=marks) for i in range(40)]
    write_jsonl(path, journaled_records(turns))
    reference = _reference_journal(path)
    read = journal.read_journal(list(read_jsonl(path)))
    assert {k: v.messages for k, v in read.items()} == reference
    assert max(len(v.tail) for v in read.values()) == 1
    requests = read_requests(path).requests
    assert len(requests) == 40
    # (the first edit, of the very first message, starts a list: cutting the one before
    # at 0 would move more than it keeps; every later one cuts the list and goes on)
    assert len({id(r.body.base) for r in requests if isinstance(r.body, SharedHistory)}) == 2
    assert sum(1 for r in requests if isinstance(r.body, SharedHistory) and r.body.tail) == 38
    _same_messages_one_by_one(requests)
    _same_analysis(requests, "anthropic")


def test_marks_counted_from_the_end_keep_the_history_shared(tmp_path: Path) -> None:
    """Breakpoints written with indexes from the end (``["messages", -1, "content", -1]``)
    are plain ones: each request stays a view of the one shared list, not a copy of it."""
    path = tmp_path / "session.jsonl"
    marks = [["messages", -1, "content", -1], ["messages", -3, "content", 0]]
    write_jsonl(path, journaled_records([Turn(f"t{i}", marks=marks) for i in range(30)]))
    requests = read_requests(path).requests
    assert len(requests) == 30
    assert all(isinstance(r.body, SharedHistory) and r.body.overlay for r in requests)
    assert len({id(r.body.base) for r in requests if isinstance(r.body, SharedHistory)}) == 1
    _same_analysis(requests, "anthropic")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    calls=st.integers(1, 14),
    compact_every=st.sampled_from([0, 0, 3, 5]),
    pauses=st.lists(st.sampled_from([0, 30, 700, 4000]), min_size=1, max_size=4),
)
def test_rollout_gives_the_same_analysis(
    tmp_path: Path, calls: int, compact_every: int, pauses: list[int]
) -> None:
    path = tmp_path / "rollout.jsonl"
    write_jsonl(path, rollout_records(calls, compact_every=compact_every, pauses=tuple(pauses)))
    copied = [c.body for c in rollout_requests(path)]
    fast = read_requests(path).requests
    assert all(isinstance(r.body, SharedHistory) for r in fast)
    assert [dict(r.body) for r in fast] == copied
    _same_analysis(fast, "openai")
