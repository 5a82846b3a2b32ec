"""Every real session in the shared data reads without error, with counts checked against
numbers computed here independently from the raw files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ipse.transcript import ToolCall, ToolResult, load
from tests.conftest import (
    BIG_SESSION,
    CLAUDE_CODE,
    HTTP_LOG,
    OPENAI_TRAJ,
    SHARED,
    SHARED_DATA,
    shared_glob,
)

pytestmark = SHARED

ALL_FILES = sorted(
    p
    for p in SHARED_DATA.rglob("*")
    if p.is_file() and p.suffix in (".json", ".jsonl") and p.parent != HTTP_LOG
)


def _raw_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _calls(messages) -> list[ToolCall]:
    return [b for m in messages for b in m.blocks if isinstance(b, ToolCall)]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_every_shared_file_reads(path: Path) -> None:
    source = load(path)
    assert source.format in ("claude-code", "codex", "mini-swe-agent")
    assert source.current().messages


def test_http_log_folder_reads() -> None:
    source = load(HTTP_LOG)
    assert source.format == "http-log"
    assert [e.index for e in source.exchanges or []] == list(range(18))


def test_big_session_tool_calls_whole_thread_and_after_compaction() -> None:
    records = _raw_records(BIG_SESSION)
    boundary = next(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    ids_all: set[str] = set()
    ids_after: set[str] = set()
    for i, record in enumerate(records):
        if record.get("type") != "assistant" or record.get("isSidechain"):
            continue
        for block in record["message"]["content"]:
            if block.get("type") == "tool_use":
                ids_all.add(block["id"])
                if i > boundary:
                    ids_after.add(block["id"])
    assert (len(ids_all), len(ids_after)) == (150, 81)

    thread = load(BIG_SESSION).thread
    assert thread is not None
    assert thread.compactions == 1
    assert len(_calls(thread.all_messages())) == len(ids_all)
    assert {c.id for c in _calls(thread.conversation.messages)} == ids_after


@pytest.mark.parametrize("path", shared_glob(CLAUDE_CODE, "*.jsonl"), ids=lambda p: p.name[:30])
def test_claude_code_main_thread_matches_raw_records(path: Path) -> None:
    """Without abandoned branches, the live path holds every main-thread message record."""
    records = _raw_records(path)
    raw_calls = {
        b["id"]
        for r in records
        if r.get("type") == "assistant"
        and not r.get("isSidechain")
        and isinstance(r.get("message", {}).get("content"), list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    }
    raw_results = {
        b["tool_use_id"]
        for r in records
        if r.get("type") == "user"
        and not r.get("isSidechain")
        and isinstance(r.get("message", {}).get("content"), list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result"
    }
    thread = load(path).thread
    assert thread is not None
    messages = list(thread.all_messages())
    calls = {c.id for c in _calls(messages)}
    results = {b.call_id for m in messages for b in m.blocks if isinstance(b, ToolResult)}
    assert calls == raw_calls
    assert results == raw_results
    # assistant records sharing message.id became one message each
    raw_ids = {
        r["message"]["id"]
        for r in records
        if r.get("type") == "assistant" and not r.get("isSidechain")
    }
    assert sum(1 for m in messages if m.role == "assistant") == len(raw_ids)


def test_subagent_threads_of_big_session() -> None:
    source = load(BIG_SESSION)
    assert source.session is not None
    names = source.session.thread_names()
    assert names == ["main", "agent-a2898e3", "agent-acompact-e1f845"]
    sub_file = BIG_SESSION.with_suffix("") / "subagents" / "agent-a2898e3.jsonl"
    expected = {
        b["id"]
        for r in _raw_records(sub_file)
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    }
    thread = load(BIG_SESSION, thread="agent-a2898e3").thread
    assert thread is not None
    assert {c.id for c in _calls(thread.all_messages())} == expected
    # the agent id alone names the thread too
    again = load(BIG_SESSION, thread="a2898e3").thread
    assert again is not None and again.name == "agent-a2898e3"


def test_inline_sidechains_are_threads() -> None:
    path = CLAUDE_CODE / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    records = _raw_records(path)
    side = [r for r in records if r.get("isSidechain")]
    uuids = {r["uuid"] for r in side}
    roots = [r["uuid"] for r in side if r.get("parentUuid") not in uuids]
    source = load(path)
    assert source.session is not None
    names = source.session.thread_names()
    assert names == ["main"] + [f"sidechain-{i}" for i in range(1, len(roots) + 1)]
    total = 0
    for name in names[1:]:
        thread = source.session.thread(name)
        total += len(_calls(thread.all_messages()))
    raw_side_calls = {
        b["id"]
        for r in side
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    }
    assert total == len(raw_side_calls)


def test_openai_trajectory_counts() -> None:
    raw = json.loads(OPENAI_TRAJ.read_text())
    expected_calls = sum(len(m.get("tool_calls") or []) for m in raw["messages"])
    expected_results = sum(1 for m in raw["messages"] if m["role"] == "tool")
    conversation = load(OPENAI_TRAJ).current()
    assert len(_calls(conversation.messages)) == expected_calls == 156
    results = [b for m in conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert len(results) == expected_results
    assert len(conversation.system) == 1
    assert conversation.messages[-1].role == "assistant"  # the exit record is no message
    assert conversation.meta["exit"]["extra"]["exit_status"] == "Submitted"


def test_http_log_usage_matches_the_stream_text() -> None:
    source = load(HTTP_LOG)
    for exchange, path in zip(
        source.exchanges or [],
        sorted(HTTP_LOG.glob("*.json"), key=lambda p: int(p.stem)),
        strict=True,
    ):
        text = json.loads(path.read_text())["response"]["content"]
        match = re.search(r'"cache_read_input_tokens":(\d+)', text)
        assert match is not None
        assert exchange.usage is not None
        assert exchange.usage["cache_read_input_tokens"] == int(match.group(1))
        assert exchange.model == "claude-opus-4-20250514"
        assert exchange.time is not None


def test_codex_rollout_links_calls_and_outputs() -> None:
    for path in sorted((SHARED_DATA / "codex").glob("*.jsonl")):
        records = _raw_records(path)
        calls = {
            r["payload"]["call_id"]
            for r in records
            if r.get("type") == "response_item"
            and r["payload"].get("type") in ("function_call", "custom_tool_call")
        }
        thread = load(path).thread
        assert thread is not None
        seen = {c.id for c in _calls(thread.all_messages())}
        compacted = any(r.get("type") == "compacted" for r in records)
        if not compacted:
            assert seen == calls
        else:
            assert seen >= calls
