"""Every cause, on hand-built request sequences: named and located correctly."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from ipse.prefix._causes import json_path
from ipse.prefix._report import analyze
from ipse.prefix._requests import Request

from .util import T0, body, requests, run


def test_a_growing_conversation_loses_nothing() -> None:
    report = run([body(1), body(2), body(3)])
    assert [r.cause for r in report.rows] == [None, None, None]
    assert report.rows[0].predicted.cache_read == 0
    assert report.rows[1].predicted.cache_read > 0
    assert report.rows[2].predicted.cache_read > report.rows[1].predicted.cache_read
    assert report.summary()["cost_lost_usd"] == 0


def test_model_changed() -> None:
    report = run([body(1), body(2, model="claude-opus-4-1-20250805")])
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "model_changed"
    assert cause.location == "model"
    assert "claude-opus-4-1" in cause.detail
    assert report.rows[1].predicted.cache_read == 0


def test_tool_added() -> None:
    second = body(2)
    second["tools"].append({"name": "write_file", "input_schema": {"type": "object"}})
    cause = run([body(1), second]).rows[1].cause
    assert cause is not None and cause.kind == "tools_changed"
    assert "added write_file" in cause.detail


def test_tool_removed() -> None:
    second = body(2)
    del second["tools"][1]
    cause = run([body(1), second]).rows[1].cause
    assert cause is not None and cause.kind == "tools_changed"
    assert cause.location == "tools[1] (search)"
    assert "removed run" in cause.detail


def test_tools_reordered() -> None:
    second = body(2)
    second["tools"] = [second["tools"][1], second["tools"][0], second["tools"][2]]
    cause = run([body(1), second]).rows[1].cause
    assert cause is not None and cause.kind == "tools_changed"
    assert cause.location == "tools[0] (run)"
    assert "reordered" in cause.detail


def test_tool_definition_edited_names_the_json_path() -> None:
    second = body(2)
    second["tools"][1]["input_schema"]["properties"]["timeout"]["type"] = "number"
    cause = run([body(1), second]).rows[1].cause
    assert cause is not None and cause.kind == "tools_changed"
    assert cause.location == "tools[1] (run)"
    assert "$.input_schema.properties.timeout.type" in cause.detail


def test_system_changed_with_a_timestamp_hint() -> None:
    first, second = body(1), body(2)
    first["system"][0]["text"] = "Now: 2026-01-05T09:00:00Z. " + first["system"][0]["text"]
    second["system"][0]["text"] = "Now: 2026-01-05T09:00:10Z. " + second["system"][0]["text"]
    report = run([first, second])
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "system_changed"
    assert cause.location == "system[0]"
    assert "timestamp" in cause.detail
    assert report.rows[1].cost_lost_usd > 0


def test_settings_changed_names_the_setting() -> None:
    first = body(1, thinking={"type": "enabled", "budget_tokens": 2000})
    second = body(2, thinking={"type": "enabled", "budget_tokens": 4000})
    report = run([first, second])
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "settings_changed"
    assert cause.location == "settings.thinking"
    # the front (tools, system) is still read: thinking invalidates the messages only
    assert report.rows[1].predicted.cache_read > 0


def test_effort_set_to_the_default_counts_as_omitted() -> None:
    second = body(2, output_config={"effort": "high"})
    assert run([body(1), second]).rows[1].cause is None


def test_message_edited_instead_of_appended() -> None:
    second = body(2)
    second["messages"][1]["content"][0]["text"] = "answer 0: corrected"
    cause = run([body(1), second]).rows[1].cause
    assert cause is not None and cause.kind == "message_edited"
    assert cause.location == "messages[1].content[0]"
    assert "message 1" in cause.detail


def test_history_truncated() -> None:
    first = body(3)
    second = body(4)
    second["messages"] = second["messages"][8:]  # two turns dropped at the front
    cause = run([first, second]).rows[1].cause
    assert cause is not None and cause.kind == "history_truncated"
    assert cause.location == "messages[0]"


def test_key_order_changed() -> None:
    first, second = body(2), body(3)
    second["messages"][1]["content"][1]["input"] = {"command": "ls"}
    first["messages"][1]["content"][1]["input"] = {"command": "ls", "timeout": 5}
    second["messages"][1]["content"][1]["input"] = {"timeout": 5, "command": "ls"}
    cause = run([first, second]).rows[1].cause
    assert cause is not None and cause.kind == "key_order_changed"
    assert cause.location == "messages[1].content[1]"


def test_ttl_expired_reports_the_idle_gap() -> None:
    report = run([body(1), body(2)], gaps=[600])
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "ttl_expired"
    assert "idle 600 s" in cause.detail
    assert report.rows[1].predicted.cache_read == 0


def test_one_hour_ttl_survives_ten_minutes() -> None:
    first, second = body(1), body(2)
    for b in (first, second):
        b["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    report = run([first, second], gaps=[600])
    assert report.rows[1].predicted.cache_read > 0
    assert report.rows[1].cause is not None  # the 5-minute message entry still expired
    assert report.rows[1].cause.kind == "ttl_expired"


def test_hits_refresh_the_ttl() -> None:
    report = run([body(1), body(2), body(3)], gaps=[240, 240])
    assert all(r.cause is None for r in report.rows)


def test_missing_times_skip_ttl_analysis() -> None:
    report = run([body(1), body(2)], times=False)
    assert report.rows[1].cause is None
    assert not report.ttl_modelled
    assert report.summary()["ttl_analysis"].startswith("skipped")
    assert any("TTL analysis skipped" in w for w in report.warnings)


def test_below_minimum() -> None:
    first = body(
        1, system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    )
    first["tools"] = []
    first["messages"] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    second = copy.deepcopy(first)
    second["messages"][0]["content"][0].pop("cache_control")
    second["messages"] += [
        {"role": "assistant", "content": "hello"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    report = run([first, second])
    cause = report.rows[1].cause
    assert cause is not None and cause.kind == "below_minimum"
    assert "minimum of 1024" in cause.detail


def test_no_breakpoint() -> None:
    first, second = body(1), body(2)
    for b in (first, second):
        b["system"][0].pop("cache_control")
        b["messages"][-1]["content"][0].pop("cache_control")
    cause = run([first, second]).rows[1].cause
    assert cause is not None and cause.kind == "no_breakpoint"


def test_breakpoint_beyond_the_lookback_window() -> None:
    first = body(1)
    second = body(12)  # eleven turns later: more than 20 new positions before the breakpoint
    second["system"][0].pop("cache_control")
    cause = run([first, second]).rows[1].cause
    assert cause is not None and cause.kind == "no_breakpoint"
    assert "within 20 positions" in cause.detail


def test_concurrent_requests_miss() -> None:
    first, second = body(1), body(2)
    reqs = [
        Request(0, first, "anthropic", T0, T0 + timedelta(seconds=30)),
        Request(1, second, "anthropic", T0 + timedelta(seconds=5), T0 + timedelta(seconds=35)),
    ]
    cause = analyze(reqs, tokenizer="bytes").rows[1].cause
    assert cause is not None and cause.kind == "concurrent"
    assert "request #0" in cause.detail


def test_side_requests_match_their_own_predecessors() -> None:
    side: dict[str, Any] = {
        "model": "claude-sonnet-4-5-20250929",
        "system": [
            {"type": "text", "text": "Summarise. " * 500, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "topic A", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ],
    }
    side2 = copy.deepcopy(side)
    side2["messages"][0]["content"][0]["text"] = "topic B"
    report = run([body(1), body(2), side, body(3), side2])
    assert [r.cause for r in report.rows] == [None] * 5
    assert report.rows[3].predicted.cache_read > report.rows[1].predicted.cache_read
    assert report.rows[4].predicted.cache_read > 0  # its system prompt, written by request 2


def test_out_of_order_logs_are_replayed_in_time_order() -> None:
    reqs = requests([body(1), body(2)])
    swapped = [reqs[1], reqs[0]]
    report = analyze(swapped, tokenizer="bytes")
    assert [r.index for r in report.rows] == [1, 0]
    assert report.rows[0].predicted.cache_read > 0  # request 1, replayed after request 0
    assert any("out of time order" in w for w in report.warnings)


def test_unknown_model_gets_defaults_with_a_warning() -> None:
    report = run([body(1, model="claude-nova-9"), body(2, model="claude-nova-9")])
    assert any("unknown model 'claude-nova-9'" in w for w in report.warnings)
    assert any("no price for 'claude-nova-9'" in w for w in report.warnings)
    assert report.rows[1].predicted.cache_read > 0


def test_json_path() -> None:
    assert json_path({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "$.a[1].b"
    assert json_path({"a": 1}, {"a": 1, "c": 2}) == "$.c"
    assert json_path([1], [1]) is None
