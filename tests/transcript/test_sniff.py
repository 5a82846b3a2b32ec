"""Format detection by sniffing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.transcript import detect
from ipse.transcript._sniff import body_dialect
from tests.conftest import BIG_SESSION, HTTP_LOG, OPENAI_TRAJ, SHARED, SHARED_DATA


@SHARED
def test_shared_files_are_detected() -> None:
    assert detect(BIG_SESSION) == "claude-code"
    assert detect(OPENAI_TRAJ) == "mini-swe-agent"
    assert detect(HTTP_LOG) == "http-log"
    for path in (SHARED_DATA / "codex").glob("*.jsonl"):
        assert detect(path) == "codex"
    assert detect(BIG_SESSION.with_suffix("") / "subagents" / "agent-a2898e3.jsonl") == (
        "claude-code"
    )


@pytest.mark.parametrize(
    ("body", "dialect"),
    [
        (
            {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}]},
            "anthropic",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
            },
            "openai-chat",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "x", "content": "y"}],
                    }
                ],
            },
            "anthropic",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "y"}]},
            "openai-chat",
        ),
        (
            {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]},
            "anthropic",
        ),
        ({"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}, "openai-chat"),
    ],
)
def test_body_dialect(body: dict, dialect: str) -> None:
    assert body_dialect(body) == dialect


def test_pretty_printed_body_is_not_mistaken_for_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(
        '{\n"model": "claude-x",\n"messages": [\n{"role": "user", "content": "hi"}\n]\n}\n'
    )
    assert detect(path) == "anthropic"


def test_single_exchange_and_har(tmp_path: Path) -> None:
    exchange = {
        "request": {
            "url": "https://api.example.com/v1/chat/completions",
            "body": {"model": "gpt-x", "messages": []},
        },
        "response": {},
    }
    one = tmp_path / "one.json"
    one.write_text(json.dumps(exchange))
    assert detect(one) == "http-log"
    har = tmp_path / "x.har"
    har.write_text(json.dumps({"log": {"entries": []}}))
    assert detect(har) == "http-log"
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text(json.dumps(exchange) + "\n" + json.dumps(exchange) + "\n")
    assert detect(jsonl) == "http-log"
