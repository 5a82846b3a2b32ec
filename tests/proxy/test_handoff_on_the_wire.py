"""The handoff on the wire: a scripted upstream calls the checkpoint tool, the official SDKs send
the following turns through the proxy, and the upstream receives valid, handed-off requests
whose rewritten prefix is byte-identical from one request to the next."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest

from ipse import jsonio
from ipse.archive import open_archive
from ipse.handoff import validate
from ipse.store import open_conversations
from ipse.transcript._codec import codec
from tests.proxy.conftest import ProxyFactory, proxies
from tests.support.anthropic_upstream import anthropic_upstream
from tests.support.openai_upstream import openai_upstream

WORDS = [
    "please fix the bug in a.py",
    "I will look at a.py first",
    "found it: an off-by-one",
    "continuing after the checkpoint",
    "thanks, and add a test",
]


def _history_bytes(raw: bytes, key: str, count: int) -> bytes:
    """The bytes on the wire of a body's first ``count`` history items (the history's opening
    bracket included, its closing one not)."""
    body = json.loads(raw)
    start = raw.index(f'"{key}":'.encode()) + len(key) + 3
    return raw[start : start + len(jsonio.dumps(body[key][:count])) - 1]


def _authored(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [
                b["text"] for b in content if b.get("type") in ("text", "input_text", "output_text")
            ]
    return out


def _tool_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [
        b["id"]
        for m in messages
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]


@dataclass(frozen=True)
class Turns:
    """What one Anthropic SDK conversation through the proxy left: the requests the upstream
    received (the turn before the checkpoint, the one that answers it, one more, and the
    ``count_tokens`` of the last), the proxy's records and log lines, and its store."""

    sent: list[dict[str, Any]]
    records: list[dict[str, Any]]
    log: str
    store: str

    @property
    def before(self) -> dict[str, Any]:
        return self.sent[1]

    @property
    def after_cp(self) -> dict[str, Any]:
        return self.sent[2]

    @property
    def after_more(self) -> dict[str, Any]:
        return self.sent[3]

    @property
    def count(self) -> dict[str, Any]:
        return self.sent[4]


_REPLIES: list[Any] = [
    {"text": WORDS[1], "tool_use": {"id": "toolu_read", "name": "Read", "input": {"path": "a.py"}}},
    {
        "text": WORDS[2],
        "tool_use": {
            "id": "toolu_cp",
            "name": "mcp__ipse__micro_handoff",
            "input": {"notes": "bug is an off-by-one in a.py"},
        },
    },
    WORDS[3],
    "done",
]


def _result(call: str, content: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call, "content": content}],
    }


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> Turns:
    """A checkpoint, then more turns, streamed and not, from the official SDK."""
    proxy_factory = proxies(tmp_path_factory.mktemp("wire"))
    with anthropic_upstream(_REPLIES) as upstream, proxy_factory(upstream.url) as proxy:
        client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-secret-key")
        model = "claude-opus-5-5"
        messages: list[dict[str, Any]] = [{"role": "user", "content": WORDS[0]}]

        def turn(stream: bool, thinking: str | None = None) -> None:
            if stream:
                with client.messages.stream(model=model, max_tokens=100, messages=messages) as s:
                    reply = s.get_final_message()
            else:
                reply = client.messages.create(model=model, max_tokens=100, messages=messages)
            # the client sends thinking back, as Claude Code does on a preserved-thinking model
            sent = (
                [{"type": "thinking", "thinking": thinking, "signature": "sig"}] if thinking else []
            )
            messages.append(
                {"role": "assistant", "content": [*sent, *(b.model_dump() for b in reply.content)]}
            )

        turn(False, thinking="read the file")
        messages.append(_result("toolu_read", "x = 1\n" * 400))
        turn(True)
        messages.append(_result("toolu_cp", "checkpoint saved"))
        turn(True, thinking="now the test")  # the first request with an answered checkpoint call
        messages.append({"role": "user", "content": WORDS[4]})
        turn(False)
        assert client.messages.count_tokens(model=model, messages=messages[:-1]).input_tokens > 0
        proxy.settle()
        sent = [r for r in upstream.received if r["path"].startswith("/v1/messages")]
        return Turns(sent, proxy.records(), proxy.log.getvalue(), proxy.store)


def test_the_request_before_the_checkpoint_is_untouched(turns: Turns) -> None:
    assert len(turns.sent) == 5
    assert "toolu_read" in _tool_ids(turns.before["body"]["messages"])


def test_every_request_after_the_checkpoint_is_valid_and_handed_off(turns: Turns) -> None:
    for request in (turns.after_cp, turns.after_more, turns.count):
        body = request["body"]
        conversation = codec("anthropic").read_body(body)
        assert validate(conversation) == []
        ids = _tool_ids(body["messages"])
        assert "toolu_read" not in ids and "toolu_cp" in ids
        assert not any(
            b.get("type") == "thinking"
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        )
        text = "\n".join(_authored(body["messages"]))
        assert all(w in text for w in WORDS[: 3 if request is turns.after_cp else 5])


def test_the_rewritten_prefix_is_byte_identical_from_one_request_to_the_next(turns: Turns) -> None:
    kept = len(turns.after_cp["body"]["messages"])
    old = _history_bytes(turns.after_cp["raw"], "messages", kept)
    assert _history_bytes(turns.after_more["raw"], "messages", kept) == old


def test_count_tokens_gets_the_same_rewrite_as_the_turn_it_counts(turns: Turns) -> None:
    assert turns.count["body"]["messages"] == turns.after_more["body"]["messages"]


def test_credentials_reach_the_upstream_and_nothing_else(turns: Turns) -> None:
    headers = {k.lower(): v for k, v in turns.after_cp["headers"].items()}
    assert "sk-ant-secret-key" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])
    assert headers["accept-encoding"] == "identity"
    raw_record = b"\n".join(jsonio.dumps(r) for r in turns.records)
    assert b"sk-ant-secret-key" not in raw_record and "sk-ant-secret-key" not in turns.log


def test_the_records_and_the_log_tell_the_handoff(turns: Turns) -> None:
    assert len(turns.records) == 5
    assert sum(1 for r in turns.records if "client_request" in r) == 3
    assert "handoff at toolu_cp" in turns.log


def test_what_was_removed_is_archived_and_the_anchor_stored(turns: Turns) -> None:
    archive = open_archive(turns.store)
    try:
        recalled = archive.recall("toolu_read")
        assert b"a.py" in recalled.call and recalled.result is not None
    finally:
        archive.close()
    store = open_conversations(turns.store)
    try:
        [state] = store.conversations()
        # one checkpoint, one handoff: the later requests carry its cut, they are no more
        assert state.anchor == "toolu_cp" and state.requests == 5 and state.handoffs == 1
    finally:
        store.close()


def test_openai_chat_checkpoint_then_more_turns(proxy_factory: ProxyFactory) -> None:
    replies: list[Any] = [
        {"text": "", "tool_call": {"id": "call_ls", "name": "bash", "arguments": '{"c":"ls"}'}},
        {
            "text": "noted",
            "tool_call": {"id": "call_cp", "name": "micro_handoff", "arguments": '{"notes":"n"}'},
        },
        "continuing",
        "done",
    ]
    with openai_upstream(replies) as upstream, proxy_factory(openai=upstream.url) as proxy:
        client: Any = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-openai-secret")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": WORDS[0]},
        ]
        for n in range(4):
            if n % 2:
                chunks = list(
                    client.chat.completions.create(
                        model="gpt-x",
                        messages=messages,
                        stream=True,
                        stream_options={"include_usage": True},
                    )
                )
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                calls = [
                    tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []
                ]
                message: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.function.name,
                                "arguments": c.function.arguments,
                            },
                        }
                        for c in calls
                    ]
            else:
                done = client.chat.completions.create(model="gpt-x", messages=messages)
                message = done.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            for call in message.get("tool_calls") or []:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "out"})
            if not message.get("tool_calls"):
                messages.append({"role": "user", "content": WORDS[4]})
        proxy.settle()
    sent = upstream.bodies("/chat/completions")
    raws = [r["raw"] for r in upstream.received]
    assert len(sent) == 4
    for body in sent[2:]:
        assert validate(codec("openai-chat").read_body(body)) == []
        ids = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
        assert "call_ls" not in ids and "call_cp" in ids
        assert WORDS[0] in "\n".join(_authored(body["messages"]))
    kept = len(sent[2]["messages"])
    assert _history_bytes(raws[3], "messages", kept) == _history_bytes(raws[2], "messages", kept)


def test_openai_responses_checkpoint(proxy_factory: ProxyFactory) -> None:
    replies: list[Any] = [
        {"text": "", "tool_call": {"id": "call_ls", "name": "bash", "arguments": "{}"}},
        {
            "text": "",
            "tool_call": {"id": "call_cp", "name": "micro_handoff", "arguments": '{"notes":"n"}'},
        },
        "continuing",
    ]
    with openai_upstream(replies) as upstream, proxy_factory(openai=upstream.url) as proxy:
        client: Any = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-openai-secret")
        items: list[Any] = [{"role": "user", "content": WORDS[0]}]
        for n in range(3):
            if n == 1:
                with client.responses.stream(model="gpt-x", input=items) as stream:
                    response = stream.get_final_response()
            else:
                response = client.responses.create(model="gpt-x", input=items)
            for item in response.output:
                items.append(item.model_dump(exclude_none=True))
                if item.type == "function_call":
                    items.append(
                        {"type": "function_call_output", "call_id": item.call_id, "output": "out"}
                    )
        assert response.output_text == "continuing"
        proxy.settle()
    sent = upstream.bodies("/responses")
    last = sent[2]
    assert validate(codec("openai-responses").read_body(last)) == []
    calls = [i.get("call_id") for i in last["input"] if i.get("type") == "function_call"]
    assert calls == ["call_cp"]
    assert WORDS[0] in json.dumps(last["input"])


def test_nothing_rewritten_without_a_checkpoint(proxy_factory: ProxyFactory) -> None:
    with anthropic_upstream(["hi"]) as upstream, proxy_factory(upstream.url) as proxy:
        client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="k")
        messages = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "micro_handoff_not", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ]
        client.messages.create(model="m", max_tokens=5, messages=messages)
        proxy.settle()
    got = upstream.received[-1]["body"]["messages"]
    assert got == messages  # forwarded byte for byte


def test_json_log_lines(proxy_factory: ProxyFactory) -> None:
    replies: list[Any] = ["one", "two"]
    with (
        anthropic_upstream(replies) as upstream,
        proxy_factory(upstream.url, json_log=True) as proxy,
    ):
        client: Any = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-json-log")
        messages: list[dict[str, Any]] = [{"role": "user", "content": "first " * 300}]
        reply = client.messages.create(model="claude-opus-5", max_tokens=5, messages=messages)
        messages += [
            {"role": "assistant", "content": reply.content[0].text},
            {"role": "user", "content": "second"},
        ]
        client.messages.create(model="claude-opus-5", max_tokens=5, messages=messages)
        proxy.settle()
        lines = [json.loads(line) for line in proxy.log.getvalue().splitlines()]
    assert len(lines) == 2
    second = lines[1]
    assert second["status"] == 200 and second["model"] == "claude-opus-5"
    assert second["usage"]["input_tokens"] == 10
    assert set(second["cache"]["predicted"]) == {"cache_read", "cache_write", "uncached"}
    assert second["cache"]["actual"]["uncached"] == 10
    assert second["requests_in_conversation"] == 2 and second["handoff"] is None
    assert "sk-ant-json-log" not in proxy.log.getvalue()
