"""A Codex rollout's breaks against its ``token_count`` events: OpenAI caches every prompt
whole and reports no writes, so what a call left in the cache is its whole input (in 128-token
steps), not its read; a miss that follows a miss is a second loss, not none."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from ipse.prefix import analyze, read_requests

from .util import T0


def _rollout(
    path: Path, usages: list[tuple[int, int]], gap: float = 20, compact_at: int | None = None
) -> Path:
    """One model call per (input, cached) pair, each a function call and its output, with a
    token_count event written twice after each call (as Codex writes it)."""
    lines: list[dict[str, Any]] = []
    clock = [0.0]

    def rec(kind: str, payload: dict[str, Any], after: float = 1) -> None:
        clock[0] += after
        stamp = (T0 + timedelta(seconds=clock[0])).isoformat().replace("+00:00", "Z")
        lines.append({"timestamp": stamp, "type": kind, "payload": payload})

    rec("session_meta", {"id": "r-1", "base_instructions": {"text": "Be a coder. " * 400}})
    rec("turn_context", {"model": "gpt-5.3-codex"})
    user = {"type": "input_text", "text": "port the parser " * 300}
    rec("response_item", {"type": "message", "role": "user", "content": [user]})
    total = 0
    for n, (used, cached) in enumerate(usages):
        if n == compact_at:
            summary = {"type": "message", "role": "user", "content": [user]}
            rec("compacted", {"message": "summary", "replacement_history": [summary]})
        call = {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"cmd": f"step {n}"}),
            "call_id": f"c{n}",
        }
        rec("response_item", call, after=gap)
        total += used
        info = {
            "total_token_usage": {"input_tokens": total, "total_tokens": total},
            "last_token_usage": {
                "input_tokens": used,
                "cached_input_tokens": cached,
                "output_tokens": 30,
            },
        }
        rec("event_msg", {"type": "token_count", "info": info})
        rec("event_msg", {"type": "token_count", "info": info})
        output = {"type": "function_call_output", "call_id": f"c{n}", "output": "ok " * 400}
        rec("response_item", output)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_miss_after_a_miss_is_a_second_loss(tmp_path: Path) -> None:
    usages = [(20_000, 3_456), (21_000, 19_968), (22_000, 3_456), (23_000, 2_560), (24_000, 22_912)]
    log = read_requests(_rollout(tmp_path / "rollout.jsonl", usages))
    assert len(log.requests) == 5  # one per model call, not per token_count event
    report = analyze(log.requests)
    lost = [row.lost_tokens for row in report.rows]
    # what each call left cached: its whole input, in 128-token steps
    assert lost == [0, 0, 20_992 - 3_456, 21_888 - 2_560, 0]
    assert [row.cause is not None for row in report.rows] == [False, False, True, True, False]


def test_a_loss_is_no_larger_than_the_calls_own_prompt(tmp_path: Path) -> None:
    usages = [(20_000, 3_456), (15_000, 3_456)]
    log = read_requests(_rollout(tmp_path / "rollout.jsonl", usages))
    row = analyze(log.requests).rows[1]
    assert row.lost_tokens == 15_000 - 3_456  # not the 19,968 the call before it left
    assert row.ideal_read == 15_000


def test_the_first_call_after_a_compaction_is_reported_apart(tmp_path: Path) -> None:
    usages = [(20_000, 3_456), (21_000, 19_968), (6_000, 0), (6_500, 5_888)]
    log = read_requests(_rollout(tmp_path / "rollout.jsonl", usages, compact_at=2))
    report = analyze(log.requests)
    assert [row.compaction for row in report.rows] == [False, False, True, False]
    after = report.rows[2]
    assert after.cause is not None and after.cause.kind == "compaction"
    summary = report.summary()
    assert summary["compaction"]["requests"] == 1
    assert summary["by_cause"] == {} and summary["cost_lost_usd"] == 0
