"""A proxy's record holds every session that went through it: separate ``codex exec`` runs are
separate conversations (the record names each request's, ``ipse.conversation``; a log without
it, by the harness's session header). A replay compares a request only with earlier requests
of its own conversation: a session's first request is a cold start, not a loss against another
session's last, and the summary has a row per conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipse.prefix import analyze, read_requests
from ipse.transcript._formats.http_log import exchange_record

INSTRUCTIONS = "You are Codex, a coding agent. " + "Follow the repository's rules. " * 300
TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]


def _request(session: str, model: str, turns: int) -> dict[str, Any]:
    """A Responses request of turn ``turns``: each earlier turn a prompt, a tool call, its
    output and an answer."""
    items: list[dict[str, Any]] = []

    def said(role: str, text: str) -> dict[str, Any]:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    for n in range(turns):
        call = f"{session}-call-{n}"
        items.append(said("user", f"{session} step {n} " * 40))
        items.append({"type": "function_call", "call_id": call, "name": "shell", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": call, "output": "ok " * 600})
        items.append(said("assistant", f"done {n}"))
    items.append(said("user", f"{session} step {turns} " * 40))
    return {
        "model": model,
        "instructions": INSTRUCTIONS,
        "tools": TOOLS,
        "input": items,
        "prompt_cache_key": session,
    }


def record(tmp_path: Path, *, in_the_record: bool = True) -> Path:
    """Three ``codex exec`` runs through one proxy, one after another: two on gpt-5, one on
    gpt-5-mini between them; each run reads only what it cached itself."""
    lines, clock = [], 1_800_000_000.0
    for session, model in (("run-a", "gpt-5"), ("run-b", "gpt-5-mini"), ("run-c", "gpt-5")):
        cached = 0
        for turn in range(3):
            body = _request(session, model, turn)
            total = 2_600 + 1_500 * turn
            usage = {
                "input_tokens": total,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 5,
            }
            clock += 20
            entry = exchange_record(
                method="POST",
                url="/v1/responses",
                headers={"content-type": "application/json", "session-id": session},
                body=body,
                status=200,
                response_headers={"content-type": "application/json"},
                response_body=json.dumps({"object": "response", "usage": usage}).encode(),
                started=clock,
                first_byte=clock + 1,
                finished=clock + 2,
                extra={"conversation": f"session:{session}"} if in_the_record else None,
            )
            lines.append(json.dumps(entry) + "\n")
            cached = total // 128 * 128
    path = tmp_path / "record.jsonl"
    path.write_text("".join(lines))
    return path


def _summary(path: Path) -> tuple[list[Any], dict[str, Any]]:
    log = read_requests(path)
    report = analyze(log.requests, warnings=log.warnings)
    return report.rows, report.summary()


def test_separate_sessions_of_a_record_are_not_one_chain(tmp_path: Path) -> None:
    rows, summary = _summary(record(tmp_path))
    assert [row.cause for row in rows] == [None] * 9
    assert summary["cost_lost_usd"] == 0 and summary["by_cause"] == {}
    assert not any("model" in line for line in summary["advice"]["fixes"].values())
    conversations = summary["by_conversation"]
    assert list(conversations) == ["session:run-a", "session:run-b", "session:run-c"]
    assert [c["requests"] for c in conversations.values()] == [3, 3, 3]
    assert sum(c["cost_usd"] for c in conversations.values()) == pytest.approx(
        summary["cost_usd"], abs=1e-5
    )


def test_a_log_without_the_records_key_is_grouped_by_the_session_header(tmp_path: Path) -> None:
    rows, summary = _summary(record(tmp_path, in_the_record=False))
    assert [row.cause for row in rows] == [None] * 9
    assert list(summary["by_conversation"]) == ["session:run-a", "session:run-b", "session:run-c"]
