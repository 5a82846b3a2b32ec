"""Reading request sequences, layers, lint, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from ipse.errors import InputError, UsageError
from ipse.prefix import lint, read_requests
from ipse.prefix._actual import actual_tokens
from ipse.prefix._billing import _int
from ipse.prefix._blocks import block_text
from ipse.prefix._layers import layers
from ipse.prefix._report import analyze
from tests.conftest import run_cli

from ..conftest import HTTP_LOG, SHARED
from .util import body


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_jsonl_of_bodies_with_ts_and_usage(tmp_path: Path) -> None:
    rows = [
        {**body(1), "ts": "2026-01-05T09:00:00Z", "usage": {"input_tokens": 5}},
        {**body(2), "ts": 1767603610, "usage": {"cache_read_input_tokens": 3000}},
    ]
    log = read_requests(_write_jsonl(tmp_path / "bodies.jsonl", rows))
    assert [r.index for r in log.requests] == [0, 1]
    assert log.requests[1].time is not None and log.requests[0].time is not None
    assert "ts" not in log.requests[0].body and "usage" not in log.requests[0].body
    assert log.requests[1].usage == {"cache_read_input_tokens": 3000}


def test_requests_without_messages_are_skipped_with_a_warning(tmp_path: Path) -> None:
    rows = [body(1), {"model": "claude-sonnet-4-5", "messages": []}, body(2)]
    log = read_requests(_write_jsonl(tmp_path / "bodies.jsonl", rows))
    assert [r.index for r in log.requests] == [0, 2]
    assert any("no messages" in w for w in log.warnings)


def test_only_requests_without_messages_is_an_error(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "empty.jsonl", [{"model": "m", "messages": []}])
    with pytest.raises(InputError, match="no request with messages"):
        read_requests(path)


def test_a_bad_line_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(orjson.dumps(body(1)) + b"\n{not json\n")
    with pytest.raises(InputError, match="line 2"):
        read_requests(path)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="no such file"):
        read_requests("/nonexistent/log.jsonl")


@SHARED
def test_unknown_provider() -> None:
    log = read_requests(HTTP_LOG)
    with pytest.raises(UsageError, match="unknown provider"):
        analyze(log.requests[:2], "gemini")


def test_layers_in_anthropic_order() -> None:
    result = layers(body(2))
    assert [layer.name for layer in result] == ["tools", "system", "settings", "history", "input"]
    assert [b.path for b in result[0].blocks] == [
        "tools[0] (read_file)",
        "tools[1] (run)",
        "tools[2] (search)",
    ]
    assert result[1].blocks[0].breakpoint == "5m"
    assert result[-1].blocks[-1].path == "messages[8].content[0]"
    # a layer hash covers everything before it: changing the system changes it and later ones
    changed = body(2)
    changed["system"][0]["text"] += " Today is 2026-01-05."
    again = layers(changed)
    assert again[0].hash == result[0].hash
    assert all(a.hash != b.hash for a, b in zip(again[1:], result[1:], strict=True))


def test_layers_stable_across_calls_and_cache_control_free() -> None:
    a = body(2)
    b = body(2)
    b["system"][0].pop("cache_control")
    assert [x.hash for x in layers(a)] == [x.hash for x in layers(b)]


def test_layers_openai_order() -> None:
    request = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "more"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    }
    result = layers(request)
    assert [layer.name for layer in result] == ["system", "tools", "settings", "history", "input"]
    assert result[1].blocks[0].path == "tools[0] (f)"
    assert [b.path for b in result[-1].blocks] == ["messages[3]"]


def test_lint_findings() -> None:
    request = body(2)
    request["system"][0]["text"] = (
        "Session 3f2b8c1e-1111-4222-8333-444455556666. " + (request["system"][0]["text"])
    )
    request["tools"][0]["cache_control"] = {"type": "ephemeral"}
    request["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    request["messages"][0]["content"] = [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}
    ]
    request["messages"][1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    codes = [f.code for f in lint(request)]
    assert "volatile_system" in codes
    assert "ttl_order" in codes
    assert "too_many_breakpoints" in codes
    assert "unstable_breakpoint" in codes


def test_lint_tool_order_against_the_previous_request() -> None:
    first, second = body(1), body(2)
    second["tools"].reverse()
    findings = lint(second, previous=first)
    assert [f.code for f in findings] == ["tool_order"]
    assert lint(body(2), previous=first) == []


def test_har_logs_are_read(tmp_path: Path) -> None:
    entries = [
        {
            "startedDateTime": f"2026-01-05T09:00:{10 * i:02d}Z",
            "request": {
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "postData": {"text": orjson.dumps(body(i + 1)).decode()},
            },
            "response": {"status": 200, "content": {"text": '{"id": "msg"}'}},
        }
        for i in range(2)
    ]
    path = tmp_path / "log.har"
    path.write_bytes(orjson.dumps({"log": {"entries": entries}}, option=orjson.OPT_INDENT_2))
    log = read_requests(path)
    assert len(log.requests) == 2
    assert log.requests[0].provider == "anthropic"
    assert log.requests[1].time is not None
    report = analyze(log.requests)
    assert report.rows[1].cause is None and report.rows[1].predicted.cache_read > 0


@pytest.mark.parametrize(
    ("system", "blocks"), [(5, 1), ({"type": "text", "text": "s"}, 1), ([5, "a", None], 3)]
)
def test_lint_and_layers_take_a_system_that_is_not_a_list_of_blocks(
    system: object, blocks: int
) -> None:
    request = body(1)
    request["system"] = system
    assert isinstance(lint(request), list)
    found = {layer.name: layer for layer in layers(request)}
    assert len(found["system"].blocks) == blocks
    changed = body(1)
    changed["system"] = {"type": "text", "text": "other"}
    assert found["system"].hash != {x.name: x for x in layers(changed)}["system"].hash


def test_openai_tool_calls_that_are_not_a_list() -> None:
    request = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "x", "tool_calls": 5},
            {"role": "user", "content": "again"},
        ],
    }
    assert [b.path for b in layers(request)[-1].blocks] == ["messages[2]"]
    assert block_text(request["messages"][1]) == "x"


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 1e30, "cache_read_input_tokens": None},
        {"input_tokens": "ten", "cache_read_input_tokens": -4},
        {"prompt_tokens": -1},
        {"prompt_tokens": float(2**60)},
    ],
)
def test_usage_values_that_are_not_token_counts_are_ignored(usage: dict[str, object]) -> None:
    tokens = actual_tokens(usage)
    assert tokens is None or (tokens.cache_read, tokens.cache_write) == (0, 0)
    assert tokens is None or 0 <= tokens.uncached < 2**53


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (0, 0),
        (7, 7),
        (2**53 - 1, 2**53 - 1),
        (2**53, None),
        (-1, None),
        (True, None),
        (False, None),
        (3.0, 3),
        (-0.5, None),
        (float(2**53), None),
        ("7", None),
        (None, None),
    ],
)
def test_a_recorded_count_is_an_integer_or_float_in_range(value: object, count: object) -> None:
    assert _int(value) == count and type(_int(value)) is type(count)


def test_prefix_json_with_a_huge_recorded_usage(tmp_path: Path) -> None:
    rows = [
        {**body(1), "usage": {"input_tokens": 1e30, "cache_read_input_tokens": 0}},
        {**body(2), "usage": {"input_tokens": 5, "cache_read_input_tokens": 100}},
    ]
    result = run_cli("prefix", str(_write_jsonl(tmp_path / "b.jsonl", rows)), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["requests"][0]["actual"]["uncached"] == 0
