"""What ``ipse usage`` reads from each kind of file: every billed call, once.

The shared Claude Code sessions are checked against the records read plainly here (every
assistant record and every sub-agent call a ``progress`` record carries, one call per response
id and request id, its output at its largest); sessions written here check what the shared ones
do not hold (records without ids, Gemini CLI sessions, the proxy's record, forked rollouts)."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ipse.usage import collect, group, total
from ipse.usage._call import Call
from tests.conftest import SHARED
from tests.usage.history import assistant, folders, shared_history, usage, write_jsonl


def _plain_calls(files: list[Path]) -> dict[str, tuple[str, str, list[int]]]:
    """Every call of the files by ``message.id:requestId``: (day, model, [input, writes,
    reads, output]), the record with the most output kept."""
    calls: dict[str, tuple[str, str, list[int]]] = {}
    for path in files:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            inner: Any = record
            if record.get("type") == "progress":
                inner = (record.get("data") or {}).get("message") or {}
            elif record.get("type") != "assistant":
                continue
            message = inner.get("message") or {}
            u = message.get("usage")
            if not isinstance(u, dict) or message.get("model") == "<synthetic>":
                continue
            key = f"{message['id']}:{inner['requestId']}"
            day = inner.get("timestamp", record.get("timestamp"))[:10]
            tokens = [u["input_tokens"], u.get("cache_creation_input_tokens", 0),
                      u.get("cache_read_input_tokens", 0), u["output_tokens"]]  # fmt: skip
            if key not in calls or tokens[3] > calls[key][2][3]:
                calls[key] = (day, message["model"], tokens)
    return calls


@SHARED
def test_the_shared_sessions_give_each_call_once_with_its_largest_output(
    shared_data: Path, tmp_path: Path
) -> None:
    claude, _ = shared_history(shared_data, tmp_path)
    ledger = collect(folders(claude)).ledger
    expected: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    plain = _plain_calls(sorted((claude / "projects").rglob("*.jsonl")))
    for day, model, tokens in plain.values():
        for i, value in enumerate(tokens):
            expected[(day, model)][i] += value
    got = {}
    for bucket in group(ledger, "day", zone=UTC):
        for model, m in bucket.models.items():
            got[(bucket.label, model)] = [int(m[1]), int(m[2] + m[3]), int(m[4]), int(m[5])]
    assert got == dict(expected)
    assert total(group(ledger, "day")).calls == len(plain)


@SHARED
def test_a_sub_agent_call_in_the_parents_progress_and_in_its_own_file_counts_once(
    shared_data: Path, tmp_path: Path
) -> None:
    claude, _ = shared_history(shared_data, tmp_path)
    session = "4d5611e5-241a-462a-8d15-5122611a9569"
    project = claude / "projects" / "-home-user-project"
    own_file = set(_plain_calls([project / session / "subagents" / "agent-a2898e3.jsonl"]))
    in_parent = set(_plain_calls([project / f"{session}.jsonl"]))
    repeated = own_file & in_parent
    assert len(repeated) == 11  # the parent's progress records repeat 11 of its 12 calls
    ledger = collect(folders(claude)).ledger
    calls = sum(r.calls for r in ledger.rows if r.agent == "agent-a2898e3")
    assert calls == len(own_file) == 12
    assert ledger.duplicates >= len(repeated)


@SHARED
def test_sub_agent_calls_only_inside_the_parents_file_are_counted_in_its_session(
    shared_data: Path, tmp_path: Path
) -> None:
    """subagent.jsonl's haiku sub-agent has no file of its own: its calls are in the parent's
    progress records only, each with its response id, request id and usage (billed calls).
    They belong to the parent's session (ccusage's ``session`` report leaves them out while its
    ``daily`` counts them: see tests/usage/test_ccusage.py)."""
    claude, _ = shared_history(shared_data, tmp_path)
    ledger = collect(folders(claude)).ledger
    rows = [r for r in ledger.rows if r.model.startswith("claude-haiku")]
    assert {r.agent for r in rows} == {"agent-afb92ff"}
    assert {r.session for r in rows} == {"491e126e-1e71-469c-ade2-fcc8af567c74"}
    assert sum(r.calls for r in rows) == 5
    by_session = {b.label: b for b in group(ledger, "session")}
    assert "claude-haiku-4-5-20251001" in by_session["491e126e-1e71-469c-ade2-fcc8af567c74"].models


def test_records_of_one_streamed_call_without_ids_are_one_call_at_their_largest_output(
    tmp_path: Path,
) -> None:
    """An exported session: no response ids, no request ids; a streamed call's records carry
    the same input side and a rising output count (`ipse.prefix.same_call`)."""
    path = tmp_path / "claude" / "projects" / "p" / "s1.jsonl"
    write_jsonl(path, [
        assistant("2026-03-01T10:00:00Z", usage(1000, output=5)),
        assistant("2026-03-01T10:00:01Z", usage(1000, output=40)),
        assistant("2026-03-01T10:00:02Z", usage(1000, output=90)),
        assistant("2026-03-01T10:01:00Z", usage(1200, output=7)),  # the next call: more read
    ])  # fmt: skip
    ledger = collect(folders(tmp_path / "claude")).ledger
    summed = total(group(ledger, "day"))
    assert summed.calls == 2
    assert summed.output == 97
    assert summed.read == 2200


def test_a_resumed_sessions_copy_of_a_call_counts_once(tmp_path: Path) -> None:
    call = assistant("2026-03-01T10:00:00Z", usage(500), message_id="msg_1", request_id="req_1")
    write_jsonl(tmp_path / "claude" / "projects" / "p" / "a.jsonl", [call])
    write_jsonl(tmp_path / "claude" / "projects" / "p" / "b.jsonl", [call])
    ledger = collect(folders(tmp_path / "claude")).ledger
    assert total(group(ledger, "day")).calls == 1
    assert ledger.duplicates == 1


def _rollout(path: Path, records: list[tuple[str, str, dict[str, Any]]]) -> Path:
    return write_jsonl(path, [{"timestamp": t, "type": k, "payload": p} for t, k, p in records])


def _count(total_input: int, last: dict[str, int]) -> dict[str, Any]:
    return {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": total_input},
        "last_token_usage": last}}  # fmt: skip


def test_a_rollouts_repeated_counts_are_not_calls_and_a_forks_inherited_calls_are_not_its(
    tmp_path: Path,
) -> None:
    day = tmp_path / "codex" / "sessions" / "2026" / "03" / "01"
    last = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50}
    _rollout(day / "rollout-a.jsonl", [
        ("2026-03-01T10:00:00Z", "session_meta", {"id": "task-a", "cwd": "/w"}),
        ("2026-03-01T10:00:00Z", "turn_context", {"model": "gpt-5.3-codex"}),
        ("2026-03-01T10:00:05Z", "event_msg", _count(1000, last)),
        ("2026-03-01T10:00:06Z", "event_msg", _count(1000, last)),  # a repeat
        ("2026-03-01T10:01:00Z", "event_msg", _count(2000, last)),
    ])  # fmt: skip
    _rollout(day / "rollout-b.jsonl", [
        ("2026-03-01T11:00:00Z", "session_meta",
         {"id": "task-b", "forked_from_id": "task-a", "timestamp": "2026-03-01T11:00:00Z"}),
        ("2026-03-01T10:00:05Z", "event_msg", _count(1000, last)),  # copied from the parent
        ("2026-03-01T11:00:00Z", "turn_context", {"model": "gpt-5.3-codex"}),
        ("2026-03-01T11:00:09Z", "event_msg", _count(3000, last)),
    ])  # fmt: skip
    ledger = collect(folders(codex=tmp_path / "codex")).ledger
    by_session = {b.label: b for b in group(ledger, "session")}
    assert by_session["task-a"].calls == 2
    assert by_session["task-b"].calls == 1
    assert by_session["task-a"].input == 400 and by_session["task-a"].read == 1600


def test_a_gemini_message_written_again_is_one_call(tmp_path: Path) -> None:
    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    tokens = {"input": 1200, "cached": 1000, "output": 30, "thoughts": 20, "total": 1250}
    write_jsonl(chats / "session-2026-03-01T10-00-abc.jsonl", [
        {"sessionId": "g1", "projectHash": "h", "startTime": "2026-03-01T10:00:00Z"},
        {"id": "u1", "type": "user", "timestamp": "2026-03-01T10:00:00Z", "content": "hi"},
        {"id": "m1", "type": "gemini", "timestamp": "2026-03-01T10:00:02Z", "content": "",
         "tokens": {**tokens, "output": 10}, "model": "gemini-2.5-pro"},
        {"id": "m1", "type": "gemini", "timestamp": "2026-03-01T10:00:03Z", "content": "ok",
         "tokens": tokens, "model": "gemini-2.5-pro"},
    ])  # fmt: skip
    ledger = collect(folders(gemini=tmp_path / "gemini")).ledger
    summed = total(group(ledger, "day"))
    assert (summed.calls, summed.input, summed.read, summed.output) == (1, 200, 1000, 50)
    assert summed.cost == pytest.approx((200 * 1.25 + 1000 * 1.25 * 0.25 + 50 * 10.0) / 1e6)


def _exchange(
    message_id: str, request_id: str, u: dict[str, Any], handoff: Any = None
) -> dict[str, Any]:
    return {"ts": "2026-03-01T10:00:00+00:00",
            "request": {"method": "POST", "url": "/v1/messages",
                        "body": {"model": "claude-opus-4-6", "messages": []}},
            "response": {"status": 200, "headers": {"request-id": request_id},
                         "body": {"id": message_id, "type": "message", "usage": u}},
            "ipse": {"provider": "anthropic", "conversation": "c1",
                     "handoff": handoff}}  # fmt: skip


def test_a_call_in_a_session_and_in_the_proxys_record_counts_once(tmp_path: Path) -> None:
    session = tmp_path / "claude" / "projects" / "p" / "s.jsonl"
    write_jsonl(session, [
        assistant("2026-03-01T10:00:01Z", usage(900), message_id="msg_a", request_id="req_a")
    ])  # fmt: skip
    handoff = {"applied": True, "anchor": "toolu_1", "saved": {"tokens": 40000, "bytes": 1}}
    record = write_jsonl(tmp_path / "record.jsonl", [
        _exchange("msg_a", "req_a", usage(900)),
        _exchange("msg_b", "req_b", usage(300), handoff),
    ])  # fmt: skip
    ledger = collect(folders(tmp_path / "claude"), [record]).ledger
    summed = total(group(ledger, "day"))
    assert summed.calls == 2  # msg_a once, msg_b (only in the record) once
    assert summed.saved_tokens == 40000 and len(summed.handoffs) == 1
    assert summed.saved_usd == pytest.approx(40000 * 5.0 * 0.1 / 1e6)


def test_the_autopilots_cuts_in_the_proxys_record_are_savings(tmp_path: Path) -> None:
    """A cut the proxy's autopilot made is an automatic checkpoint: its request's size less its
    size as sent is saved, once (the requests after it carry the cut and save nothing more)."""

    def autopilot(action: str, tokens: int, after: int) -> dict[str, Any]:
        return {"applied": True, "action": action, "anchor": "autopilot:13:toolu_bash_002",
                "tokens": tokens, "tokens_after": after, "cache_cost": 14698.0}  # fmt: skip

    made = [autopilot("cut", 42997, 15280), autopilot("nothing", 42979, 15280)]
    made += [autopilot("nudge", 30000, 20000), {"applied": False, "action": "cut"}]
    lines = []
    for n, found in enumerate(made):
        line = _exchange(f"msg_{n}", f"req_{n}", usage(300))
        line["ipse"]["autopilot"] = found
        lines.append(line)
    record = write_jsonl(tmp_path / "record.jsonl", lines)
    summed = total(group(collect(folders(tmp_path / "none"), [record]).ledger, "day"))
    assert summed.calls == 4
    assert summed.saved_tokens == 42997 - 15280 and len(summed.handoffs) == 1
    assert summed.saved_usd == pytest.approx((42997 - 15280) * 5.0 * 0.1 / 1e6)


def test_a_call_is_priced_by_kind(tmp_path: Path) -> None:
    u = {"input_tokens": 10, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 20000,
         "output_tokens": 500, "cache_creation": {"ephemeral_5m_input_tokens": 1000,
                                                  "ephemeral_1h_input_tokens": 2000}}  # fmt: skip
    write_jsonl(tmp_path / "c" / "projects" / "p" / "s.jsonl", [
        assistant("2026-03-01T10:00:00Z", u, message_id="m", request_id="r")
    ])  # fmt: skip
    summed = total(group(collect(folders(tmp_path / "c")).ledger, "day"))
    expected = (10 * 5 + 1000 * 6.25 + 2000 * 10 + 20000 * 0.5 + 500 * 25) / 1e6
    assert summed.cost == pytest.approx(expected)
    assert (summed.write_5m, summed.write_1h) == (1000, 2000)


def test_a_call_keeps_its_fields_in_order() -> None:
    call = Call("k", 1.0, "m", "anthropic", "claude-code", "p", "s", "", 1, 2, 3, 4, 5)
    assert Call(*call.row()) == call
    assert datetime.fromtimestamp(call.time, UTC).year == 1970
