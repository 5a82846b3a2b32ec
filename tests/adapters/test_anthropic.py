"""The Anthropic SDK adapter with the real SDK: the client middleware against the scripted
Messages upstream (a real HTTP server; the history's tool calls are the caller's), JSON and
streamed, sync and async; the real llama-server for plain traffic. Asserts what reaches the
server, and what the caller's own list holds."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic")

from anthropic import Anthropic, AsyncAnthropic

from ipse.adapters.anthropic import HandoffMiddleware, keep_handed_off
from ipse.archive import open_archive
from ipse.handoff import render_notes, tool_definition
from ipse.handoff.wire import rewrite_request
from tests.support.anthropic_upstream import anthropic_upstream

NOTES = {"done": ["read setup.cfg"], "open": ["bump the version"]}
TOOLS: list[Any] = [
    {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
    tool_definition("anthropic"),
]


def _history() -> list[Any]:
    return [
        {"role": "user", "content": "What version is this?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "read it", "signature": "sig1"},
                {"type": "text", "text": "I will read the config."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "version = 1.0"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "The version is 1.0."},
                {"type": "tool_use", "id": "t2", "name": "micro_handoff", "input": NOTES},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": render_notes(NOTES)}
            ],
        },
    ]


def _kinds(messages: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [b["type"] for b in m["content"]] if isinstance(m["content"], list) else ["string"]
        for m in messages
    ]


def test_create_and_stream_send_the_handed_off_history(tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    history = _history()
    original = copy.deepcopy(history)
    with anthropic_upstream(["Next I bump the version.", "Bumped."]) as upstream:
        middleware = HandoffMiddleware(archive=archive, session="s1")
        client = Anthropic(base_url=upstream.url, api_key="test", middleware=[middleware])
        reply = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=200, tools=TOOLS, messages=history
        )
        assert reply.content[0].type == "text"
        history += [
            {"role": "assistant", "content": [{"type": "text", "text": reply.content[0].text}]},
            {"role": "user", "content": "Go on."},
        ]
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=200, tools=TOOLS, messages=history
        ) as stream:
            assert stream.get_final_text() == "Bumped."
        sent = upstream.messages_requests()

    first, second = sent[0]["messages"], sent[1]["messages"]
    # what the proxy would send: the same library call on the same body
    expected = rewrite_request(
        {"model": "claude-sonnet-4-6", "max_tokens": 200, "messages": original},
        "anthropic",
        archive=archive,
        session="s1",
    )
    assert expected.body is not None and first == expected.body["messages"]
    # the handoff's marker (what was removed, the ledger), then the human's question
    assert _kinds(first) == [["text", "text"], ["text", "tool_use"], ["tool_result"]]
    assert first[0]["content"][0]["text"].startswith("[ipse handoff]")
    assert first[1]["content"][0]["text"] == "I will read the config.\n\nThe version is 1.0."
    assert first[1]["content"][1]["name"] == "micro_handoff"
    # byte-stable: the second request starts with the first one's rewritten history
    dumps = [json.dumps(m, sort_keys=False) for m in second[: len(first)]]
    assert dumps == [json.dumps(m, sort_keys=False) for m in first]
    assert second[len(first) :] == history[len(original) :]
    assert sent[1]["stream"] is True
    assert sorted(i.kind for i in archive.items("s1")) == ["thinking", "tool"]
    # the caller's own list is untouched by the middleware
    assert history[: len(original)] == original
    archive.close()


def test_models_that_bind_thinking_lose_it_in_the_kept_turns() -> None:
    kept = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "bump", "signature": "sig2"},
            {"type": "text", "text": "Bumping."},
        ],
    }
    history = [*_history(), kept, {"role": "user", "content": "ok"}]
    with anthropic_upstream() as upstream:
        client = Anthropic(
            base_url=upstream.url, api_key="test", middleware=[HandoffMiddleware(archive=False)]
        )
        for model in ("claude-sonnet-4-6", "claude-opus-5-5"):
            client.messages.create(model=model, max_tokens=50, messages=history)
        old, binding = (r["messages"] for r in upstream.messages_requests())
    assert _kinds(old)[3] == ["thinking", "text"]
    assert _kinds(binding)[3] == ["text"]


def test_the_async_client_goes_through_it_too() -> None:
    async def go(url: str) -> None:
        client = AsyncAnthropic(
            base_url=url, api_key="test", middleware=[HandoffMiddleware(archive=False)]
        )
        await client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=_history())
        await client.close()

    with anthropic_upstream() as upstream:
        asyncio.run(go(upstream.url))
        sent = upstream.messages_requests()[0]["messages"]
    assert _kinds(sent) == [["text", "text"], ["text", "tool_use"], ["tool_result"]]


def test_keep_handed_off_keeps_the_callers_list_short() -> None:
    with anthropic_upstream(["Noted."]) as upstream:
        middleware = HandoffMiddleware(archive=False)
        client = Anthropic(base_url=upstream.url, api_key="test", middleware=[middleware])
        history: list[Any] = _history()
        reply = client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=history)
        history.append({"role": "assistant", "content": reply.content})  # SDK objects
        done = keep_handed_off(history, model="claude-sonnet-4-6")
        assert done.applied and done.removed_calls == 1
        assert _kinds(history) == [
            ["text", "text"],  # the handoff's marker and the question
            ["text", "tool_use"],
            ["tool_result"],
            ["text"],
        ]
        assert history[:3] == upstream.messages_requests()[0]["messages"]
        # already handed off: the middleware has nothing left to remove, the bytes are the same
        again = keep_handed_off(history, model="claude-sonnet-4-6")
        assert again.removed_calls == 0
        client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=history)
        assert upstream.messages_requests()[1]["messages"] == history
    assert keep_handed_off([{"role": "user", "content": "hi"}]).applied is False


def test_plain_traffic_to_the_real_server_passes_through(llama: str) -> None:
    middleware = HandoffMiddleware(archive=False)
    client = Anthropic(base_url=llama, api_key="test", middleware=[middleware])
    reply = client.messages.create(
        model="smollm2", max_tokens=16, messages=[{"role": "user", "content": "Say hi."}]
    )
    assert reply.content and reply.content[0].type == "text"
    assert middleware.last is not None and not middleware.last.applied
    with client.messages.stream(
        model="smollm2", max_tokens=16, messages=[{"role": "user", "content": "Say hi."}]
    ) as stream:
        assert isinstance(stream.get_final_text(), str)


def test_count_tokens_counts_the_handed_off_history() -> None:
    with anthropic_upstream() as upstream:
        client = Anthropic(
            base_url=upstream.url, api_key="test", middleware=[HandoffMiddleware(archive=False)]
        )
        client.messages.count_tokens(model="claude-sonnet-4-6", messages=_history())
        (request,) = upstream.received
    assert request["path"].split("?")[0] == "/v1/messages/count_tokens"
    assert _kinds(request["body"]["messages"]) == [
        ["text", "text"],
        ["text", "tool_use"],
        ["tool_result"],
    ]


def test_two_conversations_through_one_client_archive_apart(tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    first, second = _history(), _history()
    # questions of their own: the rewrite cache is process-wide, and other tests send _history()
    first[0] = {"role": "user", "content": "Which Python does this need?"}
    second[0] = {"role": "user", "content": "Which licence does this use?"}
    with anthropic_upstream(["One.", "Two."]) as upstream:
        client = Anthropic(
            base_url=upstream.url, api_key="test", middleware=[HandoffMiddleware(archive=archive)]
        )
        for history in (first, second):
            client.messages.create(
                model="claude-sonnet-4-6", max_tokens=200, tools=TOOLS, messages=history
            )
    sessions = archive.sessions()
    assert len(sessions) == 2
    for session, _ in sessions:
        assert sorted(i.kind for i in archive.items(session)) == ["thinking", "tool"]
    archive.close()
