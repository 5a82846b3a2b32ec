"""The proxy's log: a line when a stream starts (not only when it ends), a line for every request
the proxy refuses, each upstream error in exactly one line, and one measurement of a handoff's
saving, the same in the log line and the record."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest

from ipse.handoff import tokens_saved
from ipse.transcript._codec import codec
from tests.proxy.conftest import NOWHERE, Proxy, ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
MESSAGES = [{"role": "user", "content": "hi"}]


def _wait_for(proxy: Proxy, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = proxy.log.getvalue()
        if text in log:
            return log
        time.sleep(0.02)
    raise AssertionError(f"no {text!r} in the log: {proxy.log.getvalue()!r}")


def test_a_stream_gets_a_line_when_it_starts(proxy_factory: ProxyFactory) -> None:
    with (
        anthropic_upstream([{"text": "slow", "stall": 6, "after": 2}]) as upstream,
        proxy_factory(upstream.url) as proxy,
    ):
        body = {"model": "m", "max_tokens": 5, "messages": MESSAGES, "stream": True}
        with (
            httpx.Client(timeout=30) as client,
            client.stream("POST", f"{proxy.url}/v1/messages", json=body, headers=HEADERS) as r,
        ):
            chunks = r.iter_raw()  # held: a discarded iterator closes the connection
            assert b"message_start" in next(chunks)
            # the stream is still open (the upstream stalls): its start is in the log already
            log = _wait_for(proxy, "streaming")
            assert "POST /v1/messages 200 m streaming" in log  # the body is read before it
            assert len(log.splitlines()) == 1
        proxy.settle()
        lines = proxy.log.getvalue().splitlines()
    assert len(lines) == 2 and "client disconnected" in lines[1]


def test_json_log_marks_start_and_end(proxy_factory: ProxyFactory) -> None:
    with anthropic_upstream(["ok"]) as upstream, proxy_factory(upstream.url, json_log=True) as p:
        body = {"model": "m", "max_tokens": 5, "messages": MESSAGES, "stream": True}
        assert httpx.post(f"{p.url}/v1/messages", json=body, headers=HEADERS).status_code == 200
        p.settle()
        events = [json.loads(line)["event"] for line in p.log.getvalue().splitlines()]
    assert events == ["start", "end"]


def test_a_refused_body_leaves_a_line(proxy_factory: ProxyFactory) -> None:
    with anthropic_upstream(["ok"]) as upstream, proxy_factory(upstream.url, max_body=1000) as p:
        big = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x" * 2000}]}
        done = httpx.post(f"{p.url}/v1/messages", json=big, headers=HEADERS)
        assert done.status_code == 413
        log = _wait_for(p, " 413 ")
    assert "POST /v1/messages 413 refused: request body larger" in log
    assert upstream.received == []


def test_each_upstream_error_is_said_once(
    proxy_factory: ProxyFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with proxy_factory(NOWHERE) as proxy:
        body = {"model": "m", "max_tokens": 5, "messages": MESSAGES}
        assert httpx.post(f"{proxy.url}/v1/messages", json=body, headers=HEADERS).status_code == 502
        proxy.settle()
        said = proxy.log.getvalue().splitlines() + [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in line for line in said) == 1


def test_the_saving_is_one_number_in_the_log_and_the_record(proxy_factory: ProxyFactory) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "please fix the bug in a.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I will look at a.py first"},
                {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"p": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_read",
                    "content": "\n".join(f"line {n}: x = {n}" for n in range(200)),
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "found it"},
                {
                    "type": "tool_use",
                    "id": "toolu_cp",
                    "name": "mcp__ipse__micro_handoff",
                    "input": {"notes": "off-by-one in a.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_cp", "content": "saved"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "continuing"}]},
        {"role": "user", "content": "and add a test"},
    ]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": history}
    with anthropic_upstream(["ok"]) as upstream, proxy_factory(upstream.url, json_log=True) as p:
        assert httpx.post(f"{p.url}/v1/messages", json=body, headers=HEADERS).status_code == 200
        p.settle()
        [line] = [json.loads(x) for x in p.log.getvalue().splitlines()]
        [entry] = p.records()
        sent = upstream.received[-1]["body"]
    read = codec("anthropic").read_body
    expected = {
        "tokens": tokens_saved(read(body), read(sent)),
        "bytes": len(json.dumps(body, separators=(",", ":")))
        - len(json.dumps(sent, separators=(",", ":"))),
    }
    assert expected["tokens"] > 200
    assert line["handoff"]["saved"] == entry["ipse"]["handoff"]["saved"] == expected
    assert "removed_bytes" not in entry["ipse"]["handoff"]  # no second, different byte count
