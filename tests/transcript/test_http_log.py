"""HTTP logs in every accepted shape: JSONL exchanges, bare bodies, HAR, streamed responses."""

from __future__ import annotations

import json
from pathlib import Path

from ipse.transcript import Text, load


def _sse(*events: dict) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 10,
    "messages": [{"role": "user", "content": "hi"}],
}
OPENAI_BODY = {
    "model": "gpt-5",
    "messages": [{"role": "system", "content": "be kind"}, {"role": "user", "content": "hi"}],
}


def test_jsonl_exchanges_with_sse_and_json_responses(tmp_path: Path) -> None:
    stream = _sse(
        {
            "type": "message_start",
            "message": {
                "usage": {
                    "input_tokens": 3,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 7,
                    "output_tokens": 1,
                }
            },
        },
        {"type": "message_delta", "usage": {"output_tokens": 42}},
    )
    lines = [
        {
            "ts": "2026-01-01T00:00:00Z",
            "request": {
                "url": "https://api.anthropic.com/v1/messages",
                "body": json.dumps(ANTHROPIC_BODY),
            },
            "response": {"status": 200, "body": stream},
        },
        {
            "ts": 1767225605.5,
            "request": {"url": "https://api.openai.com/v1/chat/completions", "body": OPENAI_BODY},
            "response": {
                "status": 200,
                "body": {
                    "usage": {
                        "prompt_tokens": 1200,
                        "prompt_tokens_details": {"cached_tokens": 1024},
                    }
                },
            },
        },
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    source = load(path)
    first, second = source.exchanges or []
    assert first.provider == "anthropic" and second.provider == "openai-chat"
    assert first.usage == {
        "input_tokens": 3,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 7,
        "output_tokens": 42,
    }
    assert second.usage is not None and second.usage["prompt_tokens_details"] == {
        "cached_tokens": 1024
    }
    assert first.time is not None and first.time.isoformat() == "2026-01-01T00:00:00+00:00"
    assert second.time is not None and second.time.timestamp() == 1767225605.5
    system = second.request.system[0]
    assert isinstance(system, Text) and system.text == "be kind"


def test_bare_bodies_with_ts_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "bodies.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({**ANTHROPIC_BODY, "ts": i * 60, "usage": {"input_tokens": i}})
            for i in range(3)
        )
    )
    exchanges = load(path).exchanges or []
    assert [e.usage for e in exchanges] == [{"input_tokens": i} for i in range(3)]
    assert "ts" not in exchanges[0].body and "usage" not in exchanges[0].body


def test_har_file(tmp_path: Path) -> None:
    har = {
        "log": {
            "entries": [
                {
                    "startedDateTime": "2026-02-01T10:00:00.000Z",
                    "request": {
                        "method": "POST",
                        "url": "https://api.anthropic.com/v1/messages",
                        "postData": {
                            "mimeType": "application/json",
                            "text": json.dumps(ANTHROPIC_BODY),
                        },
                    },
                    "response": {
                        "status": 200,
                        "headers": [{"name": "Date", "value": "Sun, 01 Feb 2026 10:00:02 GMT"}],
                        "content": {
                            "mimeType": "application/json",
                            "text": json.dumps({"usage": {"input_tokens": 9}}),
                        },
                    },
                },
                {
                    "startedDateTime": "2026-02-01T10:00:01.000Z",
                    "request": {"method": "GET", "url": "https://api.anthropic.com/v1/models"},
                    "response": {"status": 200, "content": {"text": "{}"}},
                },
            ]
        }
    }
    path = tmp_path / "x.har"
    path.write_text(json.dumps(har))
    source = load(path)
    exchanges = source.exchanges or []
    assert len(exchanges) == 1
    assert source.other_exchanges == {"GET /v1/models": 1}  # counted, not a turn
    assert exchanges[0].usage == {"input_tokens": 9}
    assert exchanges[0].response_time is not None
    assert exchanges[0].response_time.isoformat() == "2026-02-01T10:00:02+00:00"


def test_response_bodies_as_objects_and_base64_har(tmp_path: Path) -> None:
    import base64

    usage = {"input_tokens": 5, "cache_read_input_tokens": 2048}
    lines = [
        {
            "request": {"content": ANTHROPIC_BODY},
            "response": {"content": {"id": "m", "usage": usage}},
        },
        {
            "request": {"content": ANTHROPIC_BODY},
            "response": {
                "content": {
                    "mimeType": "application/json",
                    "encoding": "base64",
                    "text": base64.b64encode(json.dumps({"usage": usage}).encode()).decode(),
                }
            },
        },
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    assert [e.usage for e in load(path).exchanges or []] == [usage, usage]


def test_exchanges_whose_request_is_the_bare_body(tmp_path: Path) -> None:
    path = tmp_path / "exchanges.jsonl"
    rows = [
        {"request": ANTHROPIC_BODY, "response": {"usage": {"input_tokens": 5}}, "ts": 60},
        {"request": OPENAI_BODY, "response": {"usage": {"prompt_tokens": 9}}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    exchanges = load(path).exchanges or []
    assert [e.provider for e in exchanges] == ["anthropic", "openai-chat"]
    assert [e.body for e in exchanges] == [ANTHROPIC_BODY, OPENAI_BODY]
    assert [e.usage for e in exchanges] == [{"input_tokens": 5}, {"prompt_tokens": 9}]
    assert exchanges[0].time is not None and exchanges[0].time.year == 1970


def test_times_out_of_range_are_unknown_and_header_dates_are_aware(tmp_path: Path) -> None:
    path = tmp_path / "times.jsonl"
    rows = [
        {**ANTHROPIC_BODY, "ts": 1e20},
        {**ANTHROPIC_BODY, "ts": -1e300},
        {
            "request": {"body": ANTHROPIC_BODY},
            "response": {"headers": {"Date": "Mon, 05 Jan 2026 09:00:00 -0000"}},
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    exchanges = load(path).exchanges or []
    assert [e.time for e in exchanges[:2]] == [None, None]
    last = exchanges[2].time
    assert last is not None and last.utcoffset() is not None and last.hour == 9


def test_requests_without_messages_are_skipped_with_a_warning(tmp_path: Path) -> None:
    lines = [
        {"request": {"body": ANTHROPIC_BODY}},
        {"request": {"url": "https://api.anthropic.com/v1/models", "body": {"model": "x"}}},
        {"request": {"body": ANTHROPIC_BODY}},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    source = load(path)
    assert [e.index for e in source.exchanges or []] == [0, 2]
    assert len(source.warnings) == 1 and "request 1 has no messages" in source.warnings[0]
