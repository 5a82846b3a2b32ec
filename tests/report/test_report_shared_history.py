"""The report's composition of requests that share one history (a session's turns, a rollout's
calls, journaled requests) is summed along that list, each item read once: it gives exactly
the numbers of reading every request whole, and its cost follows the items, not the requests
times the history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.prefix import analyze, read_requests
from ipse.prefix._growing import SharedHistory
from ipse.prefix._requests import Request, RequestLog
from ipse.report._composition import Composition
from ipse.report._data import Point, _points
from tests.conftest import CLAUDE_CODE, SHARED_DATA, shared_glob
from tests.prefix.test_journal_rollout_shared import _TURN
from tests.support.generated import Turn, journaled_records, rollout_records, write_jsonl
from tests.support.plain import plain_requests


def _plain(log: RequestLog) -> RequestLog:
    """The same log, each body a plain dict holding its own list of messages."""
    return RequestLog(log.path, log.format, plain_requests(log.requests), log.warnings)


def _both(path: Path) -> tuple[list[Point], list[Point], int]:
    log = read_requests(path)
    report = analyze(log.requests, warnings=log.warnings)
    shared = sum(isinstance(r.body, SharedHistory) for r in log.requests)
    fast = list(_points(log, report, Composition(log.requests)))
    # each request read whole (a composition told of no shared list), with the marks the
    # session gives its messages (text Claude Code wrote), which no body holds
    whole = list(_points(log, report, Composition()))
    return fast, whole, shared


SESSIONS = [
    *shared_glob(CLAUDE_CODE, "*.jsonl"),
    *shared_glob(SHARED_DATA / "codex", "*.jsonl"),
]


@pytest.mark.shared
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name[:40])
def test_real_sessions_give_the_numbers_of_reading_each_request_whole(path: Path) -> None:
    fast, whole, shared = _both(path)
    assert shared  # the fast path was taken
    assert fast == whole


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(turns=st.lists(_TURN, min_size=1, max_size=9))
def test_journaled_sessions_give_the_same_numbers(tmp_path: Path, turns: list[Turn]) -> None:
    path = tmp_path / "session.jsonl"
    write_jsonl(path, journaled_records(turns))
    fast, whole, _ = _both(path)
    assert fast == whole


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.integers(1, 14), compact_every=st.sampled_from([0, 0, 3, 5]))
def test_rollouts_give_the_same_numbers(tmp_path: Path, calls: int, compact_every: int) -> None:
    path = tmp_path / "rollout.jsonl"
    write_jsonl(path, rollout_records(calls, compact_every=compact_every))
    fast, whole, shared = _both(path)
    assert shared
    assert fast == whole


def _views(messages: list[Any], counts: list[int]) -> RequestLog:
    front = {"model": "claude-sonnet-4-5", "system": "s", "cache_control": {"type": "ephemeral"}}
    requests = [
        Request(i, SharedHistory(front, messages, count), "anthropic", conversation="main")
        for i, count in enumerate(counts)
    ]
    return RequestLog(Path("views"), "claude-code", requests)


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {"n": 1}}],
    }


def _result(call_id: str, text: str = "out") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
    }


GO = {"role": "user", "content": "go"}
CHANGING = [
    # an id called again later under another name: each view names the result anew
    [GO, _call("t1", "Bash"), _result("t1"), _call("t1", "Read"), _result("t1", "again")],
    # a result answered before its call appears: unknown, then named
    [GO, _result("t9"), _call("t9", "Bash"), _result("t9")],
    # an id called twice under one name: the fast path holds
    [GO, _call("t1", "Bash"), _result("t1"), _call("t1", "Bash"), _result("t1")],
]


@pytest.mark.parametrize("messages", CHANGING)
def test_results_whose_tool_changes_between_views_are_read_whole(messages: list[Any]) -> None:
    log = _views(messages, [1, 2, 3, 4, len(messages)])
    report = analyze(log.requests)
    fast = list(_points(log, report, Composition(log.requests)))
    plain_log = _plain(log)
    whole = list(_points(plain_log, report, Composition(plain_log.requests)))
    assert fast == whole


@pytest.mark.parametrize("at", [1, 3])
def test_a_shrinking_view_is_marked_from_its_own_items(at: int) -> None:
    """A view much shorter than the one before is a handoff when its own items name the
    checkpoint tool, else a reset: the shared list is searched once, item by item, and what
    a longer view found does not mark a shorter one."""
    messages = [GO, _call("t1", "Bash"), _result("t1"), _call("t2", "Bash"), _result("t2")]
    messages += [{"role": "assistant", "content": "x " * 400}, {"role": "user", "content": "go"}]
    messages[at] = _call(f"t{at}", "micro_handoff")
    log = _views(messages, [7, 5, 7, 2])
    report = analyze(log.requests)
    fast = list(_points(log, report, Composition(log.requests)))
    plain_log = _plain(log)
    whole = list(_points(plain_log, report, Composition(plain_log.requests)))
    assert fast == whole
    assert [p.marker for p in fast] == [None, "handoff", None, "handoff" if at < 2 else "reset"]


def test_requests_with_a_tail_of_their_own_are_summed_along_the_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Journaled requests each sending the last message of the one before again, changed:
    every one but the last keeps that message as a tail, and is still summed along the shared
    list (no request read whole) to the numbers of reading it whole."""
    import ipse.report._composition as composition

    path = tmp_path / "session.jsonl"
    marks = [["messages", -2, "content", 0]]
    write_jsonl(
        path, journaled_records([Turn(f"t{i}", mode="edit", marks=marks) for i in range(30)])
    )
    log = read_requests(path)
    assert sum(1 for r in log.requests if isinstance(r.body, SharedHistory) and r.body.tail) == 28
    report = analyze(log.requests, warnings=log.warnings)
    plain_log = _plain(log)
    whole = list(_points(plain_log, report, Composition(plain_log.requests)))
    read_whole: list[Request] = []
    reader = composition.conversation_of

    def counted(request: Request) -> Any:
        read_whole.append(request)
        return reader(request)

    monkeypatch.setattr(composition, "conversation_of", counted)
    fast = list(_points(log, report, Composition(log.requests)))
    assert fast == whole
    assert read_whole == []
