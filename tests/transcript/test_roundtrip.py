"""Reading then writing an unchanged conversation gives back JSON equal to the input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.errors import UsageError
from ipse.transcript import Conversation, Text, Thinking, ToolCall, ToolResult, detect, load, write
from ipse.transcript._codec import codec
from ipse.transcript._formats import anthropic, openai_chat, openai_responses
from ipse.transcript._model import Origin
from tests.conftest import HTTP_LOG, OPENAI_TRAJ, SHARED
from tests.support.strategies import json_values
from tests.transcript.responses import (
    assistant_message,
    extra_keys,
    function_call,
    function_output,
    reasoning,
    responses_bodies,
    user_message,
)


def read_body_of(dialect: str, body: dict[str, Any]) -> Conversation:
    return codec(dialect).read_body(body)


@SHARED
def test_captured_anthropic_bodies_round_trip_byte_for_byte() -> None:
    for path in sorted(HTTP_LOG.glob("*.json")):
        body = orjson.loads(path.read_bytes())["request"]["content"]
        out = anthropic.write_body(anthropic.read_body(body))
        assert out == body
        assert orjson.dumps(out) == orjson.dumps(body)


@SHARED
def test_openai_trajectory_round_trips() -> None:
    document = json.loads(OPENAI_TRAJ.read_text())
    assert openai_chat.write_body(openai_chat.read_body(document)) == document


# ---------------------------------------------------------------- generated Anthropic bodies

_text = st.text(max_size=40)
_key = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _text)
_json_value = json_values(_json_leaf, _key, size=3, leaves=6)
_cache = st.sampled_from(
    [
        {},
        {"cache_control": {"type": "ephemeral"}},
        {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
)
_ids = st.text(alphabet="abcdef0123456789", min_size=4, max_size=8).map(lambda s: "toolu_" + s)


@st.composite
def _anthropic_block(draw: st.DrawFn, role: str) -> dict[str, Any]:
    extra = draw(_cache)
    kinds = ["text", "image", "unknown"]
    kinds += (
        ["tool_use", "thinking", "redacted_thinking"] if role == "assistant" else ["tool_result"]
    )
    kind = draw(st.sampled_from(kinds))
    if kind == "text":
        return {"type": "text", "text": draw(_text), **extra}
    if kind == "image":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": draw(_text)},
            **extra,
        }
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": draw(_ids),
            "name": draw(_key),
            "input": draw(st.dictionaries(_key, _json_value, max_size=3)),
            **extra,
        }
    if kind == "thinking":
        return {"type": "thinking", "thinking": draw(_text), "signature": draw(_text)}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": draw(_text)}
    if kind == "tool_result":
        content = draw(
            st.one_of(
                _text,
                st.lists(
                    st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2
                ),
            )
        )
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": draw(_ids),
            "content": content,
            **extra,
        }
        if draw(st.booleans()):
            block["is_error"] = draw(st.booleans())
        return block
    return {"type": "future_block_" + draw(_key), "payload": draw(_json_value)}


@st.composite
def anthropic_bodies(draw: st.DrawFn) -> dict[str, Any]:
    messages = []
    for i in range(draw(st.integers(1, 6))):
        role = "user" if i % 2 == 0 else "assistant"
        if draw(st.booleans()):
            content: Any = draw(_text)
        else:
            content = draw(st.lists(_anthropic_block(role), max_size=4))
        message: dict[str, Any] = {"role": role, "content": content}
        if draw(st.booleans()):
            message["x_unknown"] = draw(_json_value)
        messages.append(message)
    body: dict[str, Any] = {"model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-x"]))}
    body["max_tokens"] = draw(st.integers(1, 64000))
    system = draw(
        st.one_of(
            st.none(),
            _text,
            st.lists(
                st.builds(lambda t, c: {"type": "text", "text": t, **c}, _text, _cache), max_size=3
            ),
        )
    )
    if system is not None:
        body["system"] = system
    if draw(st.booleans()):
        body["tools"] = draw(
            st.lists(
                st.builds(
                    lambda n, d: {"name": n, "description": d, "input_schema": {"type": "object"}},
                    _key,
                    _text,
                ),
                max_size=3,
            )
        )
    body["messages"] = messages
    extra = draw(st.dictionaries(_key.map(lambda k: "x_" + k), _json_value, max_size=2))
    body.update(extra)
    if draw(st.booleans()):
        body = dict(reversed(list(body.items())))
    return body


@settings(max_examples=150, deadline=None)
@given(anthropic_bodies())
def test_generated_anthropic_bodies_round_trip(body: dict[str, Any]) -> None:
    out = anthropic.write_body(anthropic.read_body(body))
    assert out == body
    assert orjson.dumps(out) == orjson.dumps(body)


# ---------------------------------------------------------------- generated OpenAI bodies


@st.composite
def openai_bodies(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append(
            {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(_text)}
        )
    for i in range(draw(st.integers(1, 5))):
        if i % 2 == 0:
            content: Any = draw(
                st.one_of(
                    _text,
                    st.lists(
                        st.one_of(
                            st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
                            st.fixed_dictionaries(
                                {
                                    "type": st.just("image_url"),
                                    "image_url": st.fixed_dictionaries({"url": _text}),
                                }
                            ),
                        ),
                        min_size=1,
                        max_size=3,
                    ),
                )
            )
            messages.append({"role": "user", "content": content})
            continue
        calls = draw(
            st.lists(
                st.builds(
                    lambda i, n, a: {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    },
                    _ids,
                    _key,
                    st.dictionaries(_key, _json_leaf, max_size=2),
                ),
                max_size=2,
                unique_by=lambda c: c["id"],
            )
        )
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": draw(st.one_of(st.none(), _text)),
        }
        if calls:
            assistant["tool_calls"] = calls
        if draw(st.booleans()):
            assistant["reasoning_content"] = draw(_text.filter(bool))
        messages.append(assistant)
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(_text)})
    body: dict[str, Any] = {"model": "gpt-x", "messages": messages}
    if draw(st.booleans()):
        body["tools"] = [{"type": "function", "function": {"name": draw(_key)}}]
    body.update(draw(st.dictionaries(_key.map(lambda k: "x_" + k), _json_value, max_size=2)))
    return body


@settings(max_examples=150, deadline=None)
@given(openai_bodies())
def test_generated_openai_bodies_round_trip(body: dict[str, Any]) -> None:
    assert openai_chat.write_body(openai_chat.read_body(body)) == body


def test_changed_text_is_written_from_its_fields_keeping_extra_keys() -> None:
    body: dict[str, Any] = {
        "model": "claude-x",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }
    conversation = anthropic.read_body(body)
    message = conversation.messages[0]
    old = message.blocks[0]
    assert isinstance(old, Text)
    changed = type(conversation)(
        messages=(
            type(message)(
                message.role,
                (Text("hello", old.origin, old.raw),),
                message.content_form,
                message.raw,
            ),
        ),
        settings=conversation.settings,
        raw=conversation.raw,
    )
    out = write(changed)
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][0]["content"][0]["text"] == "hi"  # the input is untouched


def test_openai_changed_call_input_is_reserialized() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    }
    conversation = openai_chat.read_body(body)
    call = conversation.messages[1].blocks[0]
    assert isinstance(call, ToolCall) and call.input == {"a": 1}
    new_call = ToolCall(call.id, call.name, {"a": 2}, None, raw=call.raw)
    msg = conversation.messages[1]
    edited = type(conversation)(
        messages=(
            conversation.messages[0],
            type(msg)(msg.role, (new_call,), msg.content_form, msg.raw),
            conversation.messages[2],
        ),
        dialect="openai-chat",
        raw=conversation.raw,
    )
    out = openai_chat.write_body(edited)
    assert out["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"a":2}'


# ---------------------------------------------------------------- OpenAI Responses bodies


@settings(max_examples=150, deadline=None)
@given(data=st.data(), body=responses_bodies())
def test_generated_responses_bodies_round_trip_byte_for_byte(
    data: st.DataObject, body: dict[str, Any]
) -> None:
    body = data.draw(extra_keys(body))
    conversation = openai_responses.read_body(body)
    assert conversation.dialect == "openai-responses"
    out = write(conversation)
    assert orjson.dumps(out) == orjson.dumps(body)


def test_responses_items_map_to_blocks() -> None:
    body = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            user_message("list the files", as_string=True),
            reasoning("I should run ls"),
            function_call("call_1", "shell"),
            {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            function_output("call_1", "a.txt"),
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "done"},
            assistant_message("one file"),
            {"type": "item_reference", "id": "msg_9"},
        ],
    }
    conversation = read_body_of("openai-responses", body)
    assert conversation.system == (Text("Be brief.", Origin.SYSTEM),)
    roles = [(m.role, [b.kind for b in m.blocks]) for m in conversation.messages]
    assert roles == [
        ("user", ["text"]),
        ("assistant", ["thinking", "tool_call", "tool_call", "other"]),
        ("tool", ["tool_result", "tool_result"]),
        ("assistant", ["text", "other"]),
    ]
    thinking = conversation.messages[1].blocks[0]
    assert isinstance(thinking, Thinking)
    assert (thinking.text, thinking.signature) == ("I should run ls", "gAAAA-opaque")
    call = conversation.messages[1].blocks[1]
    assert isinstance(call, ToolCall) and call.input == {"cmd": "ls"}
    results = list(conversation.messages[2].of_kind(ToolResult))
    assert [(r.call_id, r.text) for r in results] == [("call_1", "a.txt"), ("call_2", "done")]
    assert write(conversation) == body


def test_responses_string_input_round_trips() -> None:
    body = {"model": "gpt-5", "input": "hello", "instructions": "x", "stream": True}
    conversation = read_body_of("openai-responses", body)
    assert [m.text for m in conversation.messages] == ["hello"]
    assert orjson.dumps(write(conversation)) == orjson.dumps(body)


def test_responses_body_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps({"model": "gpt-5", "input": [user_message("hi")]}))
    assert detect(path) == "openai-responses"
    assert load(path).current().dialect == "openai-responses"


def test_no_codec_for_an_unknown_dialect() -> None:
    with pytest.raises(UsageError):
        codec("gemini")
