"""Prefix analysis against recorded usage: the record is the truth for cost and loss, and each
row says whether the prediction agrees; plus messages that switch between string content and
one text block between turns."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec

from ipse.prefix import lint
from ipse.prefix._report import analyze
from ipse.prefix._requests import Request

from .util import T0, body, requests, run


def _usage(read: int, write: int, uncached: int = 3) -> dict[str, int]:
    return {
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "input_tokens": uncached,
    }


def _recorded(bodies: list[dict[str, Any]], usages: list[dict[str, int]]) -> list[Request]:
    return [
        msgspec.structs.replace(r, usage=u) for r, u in zip(requests(bodies), usages, strict=True)
    ]


def test_a_predicted_loss_the_record_does_not_show_costs_nothing() -> None:
    first, second = body(3), body(4, thinking={"type": "enabled", "budget_tokens": 2048})
    modelled = run([first, second])
    assert modelled.rows[1].cause is not None
    assert modelled.rows[1].cause.kind == "settings_changed"
    assert modelled.rows[1].cost_lost_usd > 0
    report = analyze(
        _recorded([first, second], [_usage(0, 20_000), _usage(20_000, 900)]), tokenizer="bytes"
    )
    row = report.rows[1]
    assert row.basis == "recorded"
    assert row.cause is None and row.cost_lost_usd == 0 and row.lost_tokens == 0
    assert row.predicted_cause is not None and row.predicted_cause.kind == "settings_changed"
    assert row.agrees is False
    document = row.to_json()
    assert document["basis"] == "recorded" and document["agrees"] is False
    assert document["predicted_cause"] == "settings_changed"
    summary = report.summary()
    assert summary["cost_lost_usd"] == 0
    assert summary["tokens"]["cache_read"] == 20_000  # totals from the record
    assert summary["basis"] == {"recorded": 2, "modelled": 0}


def test_a_recorded_miss_the_model_does_not_predict_is_not_served() -> None:
    first, second = body(3), body(4)
    report = analyze(
        _recorded([first, second], [_usage(0, 20_000), _usage(0, 20_900)]), tokenizer="bytes"
    )
    row = report.rows[1]
    assert row.predicted.cache_read > 0  # the model says it should have been read
    assert row.cause is not None and row.cause.kind == "not_served"
    assert row.agrees is False
    assert 15_000 < row.lost_tokens <= 20_000  # no more than the first request left cached
    assert row.cost_lost_usd > 0
    assert report.summary()["by_cause"]["not_served"]["requests"] == 1


def test_when_both_agree_on_a_loss_the_record_prices_it() -> None:
    first = body(3)
    second = body(4)
    second["system"] = [
        dict(second["system"][0], text="Today is Monday. " + first["system"][0]["text"])
    ]
    report = analyze(
        _recorded([first, second], [_usage(0, 20_000), _usage(0, 20_900)]), tokenizer="bytes"
    )
    row = report.rows[1]
    assert row.cause is not None and row.cause.kind == "system_changed"
    assert row.agrees is True
    assert row.charged.cache_write == 20_900


def test_rows_without_a_record_stay_modelled() -> None:
    report = run([body(3), body(4)])
    assert all(r.basis == "modelled" and r.agrees is None for r in report.rows)
    assert report.summary()["basis"] == {"recorded": 0, "modelled": 2}


# ------------------------------------------------------------- string content vs one text block


def test_anthropic_text_block_in_another_key_order_is_the_same_block() -> None:
    first, second = body(3), body(4)
    text = second["messages"][0]["content"]
    second["messages"][0]["content"] = [{"text": text, "type": "text"}]
    report = run([first, second])
    assert report.rows[1].cause is None and report.rows[1].predicted.cache_read > 0


def _chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": messages}


def test_openai_string_and_one_text_part_render_alike() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are careful. " * 400},
        {"role": "user", "content": "describe the plan " * 200},
        {"role": "assistant", "content": "ok"},
    ]
    first = _chat([*history, {"role": "user", "content": "next"}])
    switched = copy.deepcopy(history)
    switched[1]["content"] = [{"type": "text", "text": switched[1]["content"]}]
    second = _chat(
        [
            *switched,
            {"role": "user", "content": [{"type": "text", "text": "next"}]},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "b"},
        ]
    )
    out = [
        Request(i, b, "openai", T0 + timedelta(seconds=10 * i), T0 + timedelta(seconds=10 * i + 1))
        for i, b in enumerate([first, second])
    ]
    report = analyze(out, tokenizer="bytes")
    assert report.rows[1].cause is None
    assert report.rows[1].predicted.cache_read > 1024


# ------------------------------------------------------------------------------------- lint


def _session(path: Path, turns: int) -> Path:
    """A small Claude Code session whose usage shows the front was read from the cache."""
    records: list[dict[str, Any]] = []
    parent = None
    for n in range(turns):
        user = {
            "type": "user",
            "uuid": f"u{n}",
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": f"2026-01-01T00:00:{2 * n:02d}Z",
            "message": {"role": "user", "content": f"step {n}"},
        }
        usage = _usage(18_000 if n else 0, 300 if n else 18_300)
        assistant = {
            "type": "assistant",
            "uuid": f"a{n}",
            "parentUuid": f"u{n}",
            "sessionId": "s",
            "timestamp": f"2026-01-01T00:00:{2 * n + 1:02d}Z",
            "message": {
                "id": f"m{n}",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": f"did {n}"}],
                "usage": usage,
            },
        }
        records += [user, assistant]
        parent = f"a{n}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_lint_does_not_judge_a_front_a_session_does_not_record(tmp_path: Path, cli: Any) -> None:
    path = _session(tmp_path / "s.jsonl", 4)
    result = cli("lint", str(path), "--json")
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["findings"] == []


def test_recorded_cache_use_overrules_the_size_estimate() -> None:
    small = body(1)
    small["system"] = [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}]
    small["tools"] = []
    small["messages"] = [{"role": "user", "content": "hi"}]
    assert [f.code for f in lint(small)] == ["unstable_breakpoint"]
    assert lint(small, usage=_usage(5_000, 0)) == []


def test_lint_as_openai_sees_an_anthropic_system_prompt() -> None:
    anthropic = body(1)
    anthropic["system"] = [
        {"type": "text", "text": "Now: 2026-11-30T10:00:00Z. " + anthropic["system"][0]["text"]}
    ]
    codes = [f.code for f in lint(anthropic, "openai")]
    assert codes == ["volatile_system"]
    chat = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Now: 2026-11-30T10:00:00Z. Be brief."},
            {"role": "user", "content": "hi"},
        ],
    }
    assert "volatile_system" in [f.code for f in lint(chat, "anthropic")]


def test_the_cli_reports_basis_and_agreement(tmp_path: Path, cli: Any) -> None:
    rows = [
        {**body(3), "ts": "2026-01-05T09:00:00Z", "usage": _usage(0, 20_000)},
        {
            **body(4, thinking={"type": "enabled", "budget_tokens": 2048}),
            "ts": "2026-01-05T09:00:10Z",
            "usage": _usage(20_000, 900),
        },
    ]
    path = tmp_path / "bodies.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    document = json.loads(cli("prefix", str(path), "--json").stdout)
    second = document["requests"][1]
    assert second["basis"] == "recorded" and second["agrees"] is False
    assert second["cause"] is None and second["predicted_cause"] == "settings_changed"
    assert document["summary"]["cost_lost_usd"] == 0
    human = cli("prefix", str(path)).stdout
    assert "predicted settings_changed" in human and "not charged" in human
