"""Logged exchanges (the proxy's record): a request that carries ipse's own handoff has its
loss at the cut named ``handoff``, not the truncation or edit the replay sees there; a response
that carries the API's cache diagnosis, plain or streamed, has that diagnosis as its cause."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ipse.prefix import analyze, read_requests
from tests.conftest import CliRun

from .util import T0, body


def _exchange(n: int, request: dict[str, Any], used: dict[str, int], **ipse: Any) -> str:
    entry: dict[str, Any] = {
        "ts": (T0 + timedelta(seconds=30 * n)).isoformat(),
        "request": {"method": "POST", "url": "/v1/messages", "headers": {}, "body": request},
        "response": {
            "status": 200,
            "headers": {},
            "body": {"type": "message", "role": "assistant", "content": [], "usage": used},
        },
    }
    if ipse:
        entry["ipse"] = ipse
    return json.dumps(entry) + "\n"


def _usage(read: int, write: int) -> dict[str, int]:
    return {
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "input_tokens": 5,
    }


@pytest.mark.parametrize("handed_off", [True, False])
def test_the_loss_at_ipses_handoff_is_named_handoff(tmp_path: Path, handed_off: bool) -> None:
    long, cut = body(6), body(6)
    # the handoff removed the tool calls and results of the first turns: history cut short
    cut["messages"] = [cut["messages"][0], *cut["messages"][-5:]]
    handoff = {"applied": True, "anchor": "toolu_7", "removed_calls": 4, "cached": False}
    lines = _exchange(0, long, _usage(0, 9_000))
    lines += _exchange(1, cut, _usage(3_000, 4_000), **({"handoff": handoff} if handed_off else {}))
    path = tmp_path / "record.jsonl"
    path.write_text(lines, encoding="utf-8")
    log = read_requests(path)
    row = analyze(log.requests).rows[1]
    assert row.cause is not None
    if handed_off:
        assert row.cause.kind == "handoff"
        assert "toolu_7" in row.cause.detail and "4 tool call" in row.cause.detail
    else:
        assert row.cause.kind in ("history_truncated", "message_edited")


@pytest.mark.parametrize("streamed", [False, True])
def test_the_apis_diagnosis_in_a_logged_response_is_the_cause(
    tmp_path: Path, streamed: bool
) -> None:
    first, second = body(6), body(7)
    diagnosis = {
        "cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 8_000}
    }
    lines = _exchange(0, first, _usage(0, 9_000))
    entry = json.loads(_exchange(1, second, _usage(1_000, 8_500)))
    message = entry["response"]["body"]
    message["diagnostics"] = diagnosis
    if streamed:
        start = json.dumps({"type": "message_start", "message": message})
        entry["response"]["body"] = f"event: message_start\ndata: {start}\n\n"
    path = tmp_path / "record.jsonl"
    path.write_text(lines + json.dumps(entry) + "\n", encoding="utf-8")
    row = analyze(read_requests(path).requests).rows[1]
    assert row.cause is not None and row.cause.kind == "system_changed"
    assert row.cause.location == "api" and row.lost_tokens == 8_000


def test_a_handoff_without_a_loss_is_still_shown_with_its_saving(
    tmp_path: Path, cli: CliRun
) -> None:
    """A rewritten request whose usage shows no loss (nothing was cached: a short or a cold
    conversation) still shows the handoff, with the saving the proxy's record quotes."""
    long, cut = body(6), body(6)
    cut["messages"] = [cut["messages"][0], *cut["messages"][-5:]]
    handoff = {
        "applied": True,
        "anchor": "toolu_7",
        "removed_calls": 4,
        "saved": {"tokens": 1653, "bytes": 4584},
    }
    path = tmp_path / "record.jsonl"
    lines = _exchange(0, long, _usage(0, 0)) + _exchange(1, cut, _usage(0, 0), handoff=handoff)
    path.write_text(lines, encoding="utf-8")
    rows = analyze(read_requests(path).requests).rows
    assert rows[1].cause is None and rows[0].handoff is None
    shown = rows[1].to_json()["handoff"]
    assert shown == {
        "anchor": "toolu_7",
        "removed_calls": 4,
        "saved_tokens": 1653,
        "saved_bytes": 4584,
    }
    said = cli("prefix", str(path))
    assert said.returncode == 0, said.stderr
    assert "handoff at toolu_7 removed 4 tool call(s), saved 1653 tokens" in said.stdout
