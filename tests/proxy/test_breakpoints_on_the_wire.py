"""Prompt-cache breakpoints through the proxy: the client marks blocks the handoff removes (a
tool call, a tool result, thinking), and the upstream still receives as many breakpoints, on
kept blocks at or before the marked ones, byte-identical from one request to the next."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from ipse.handoff import validate
from ipse.transcript._codec import codec
from tests.proxy.conftest import ProxyFactory
from tests.support.anthropic_upstream import anthropic_upstream

MARK = {"type": "ephemeral"}


def _marks(messages: list[dict[str, Any]]) -> list[tuple[int, int, Any]]:
    return [
        (m, b, block["cache_control"])
        for m, message in enumerate(messages)
        if isinstance(message["content"], list)
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


def test_the_upstream_receives_the_breakpoints(proxy_factory: ProxyFactory) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "please fix the bug in a.py"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "read it",
                    "signature": "s1",
                    "cache_control": MARK,
                },
                {"type": "text", "text": "I will look at a.py first"},
                {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_read",
                    "content": "x = 1\n" * 200,
                    "cache_control": MARK,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "found it: an off-by-one"},
                {
                    "type": "tool_use",
                    "id": "toolu_cp",
                    "name": "mcp__ipse__micro_handoff",
                    "input": {"notes": "off-by-one in a.py"},
                    "cache_control": MARK,
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_cp", "content": "checkpoint saved"}
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "continuing"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "and add a test", "cache_control": MARK}],
        },
    ]
    with (
        anthropic_upstream(["ok", "ok"]) as upstream,
        proxy_factory(upstream.url, json_log=True) as proxy,
    ):
        client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="k")
        for _ in range(2):
            client.messages.create(model="claude-sonnet-4-6", max_tokens=5, messages=history)
        proxy.settle()
        lines = [json.loads(line) for line in proxy.log.getvalue().splitlines()]
    # the log line counts the tokens the handoff saved (the 200-line result, mostly)
    saved = [line["handoff"]["saved"]["tokens"] for line in lines]
    assert saved[0] == saved[1] > 200
    assert all(line["handoff"]["saved"]["bytes"] > 1000 for line in lines)
    first, second = (r["body"] for r in upstream.received[-2:])
    assert first == second  # the same bytes every time
    sent = first["messages"]
    assert len(sent) < len(history)  # handed off
    # four markers asked, four received: the thinking's, the result's and the checkpoint call's
    # moved onto the kept words before them, and the newest stayed where it was
    marks = _marks(sent)
    assert [m for _, _, m in marks] == [MARK] * 4
    assert sent[-1]["content"][-1]["cache_control"] == MARK
    marked = [sent[m]["content"][b] for m, b, _ in marks]
    assert [b.get("text") or b.get("name") for b in marked] == [
        "please fix the bug in a.py",  # the thinking's: the kept block before it
        "I will look at a.py first\n\nfound it: an off-by-one",  # the result's: the joined text
        "mcp__ipse__micro_handoff",  # kept, marker in place
        "and add a test",
    ]
    assert not validate(codec("anthropic").read_body(first))


def test_the_text_log_line_names_tokens_saved() -> None:
    from ipse.handoff.wire import Rewrite
    from ipse.proxy._exchange import Exchange
    from ipse.proxy._record import log_line

    rewrite = Rewrite({"messages": []}, anchor="toolu_cp", removed_calls=2, cached=True)
    ex = Exchange(
        method="POST",
        path="/v1/messages",
        query="",
        provider="anthropic",
        dialect="anthropic",
        key=None,
        headers=[],
        status=200,
        parsed={"model": "claude-sonnet-4-6"},
        rewrite=rewrite,
        client_body=b"x" * 5000,
        sent_body=b"x" * 1000,
        started=0.0,
        finished=0.5,
        saved_tokens=1234,
        handoff_event=True,
    )
    line = log_line(ex, None, None, None, json_log=False)
    assert "saved 1234 tokens, 4000 bytes (cached prefix)" in line
    # a later request at the same cut: rewritten the same way, not another handoff
    ex.handoff_event, ex.saved_tokens = False, None
    line = log_line(ex, None, None, None, json_log=False)
    assert "saved" not in line and "cut at toolu_cp (the handoff of an earlier request)" in line
