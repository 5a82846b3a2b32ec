"""Transitions as tools: Anthropic and OpenAI definitions, and the dispatcher."""

from __future__ import annotations

import json

import pytest
import twin_strategies as ts

from ipse.errors import InputError
from ipse.twin import TwinState, anthropic_tools, openai_tools
from ipse.twin._tools import dispatch

T0 = ts.T0
NAMES = {
    "establish_fact",
    "supersede_fact",
    "make_commitment",
    "open_loop",
    "close_loop",
    "set_active_loop",
    "set_counterparty",
    "use_fact",
}


def test_definitions_in_both_shapes() -> None:
    anthropic = anthropic_tools()
    openai = openai_tools()
    assert {t["name"] for t in anthropic} == NAMES
    assert {t["function"]["name"] for t in openai} == NAMES
    for a, o in zip(anthropic, openai, strict=True):
        assert set(a) == {"name", "description", "input_schema"}
        assert o["type"] == "function"
        assert a["input_schema"] == o["function"]["parameters"]
        assert a["input_schema"]["type"] == "object"
        assert set(a["input_schema"]["required"]) <= set(a["input_schema"]["properties"])
    json.dumps(anthropic)  # plain JSON


def test_dispatch_anthropic_tool_use_blocks() -> None:
    content = [
        {"type": "text", "text": "Noted."},
        {
            "type": "tool_use",
            "id": "tu1",
            "name": "establish_fact",
            "input": {"text": "prefers email"},
        },
        {"type": "tool_use", "id": "tu2", "name": "open_loop", "input": {"text": "refund 2231"}},
        {"type": "tool_use", "id": "tu3", "name": "web_search", "input": {"q": "x"}},
    ]
    out = dispatch(TwinState.new("ada", "Dana", at=T0), content, at=T0)
    assert [f.text for f in out.state.facts] == ["prefers email"]
    assert [lp.text for lp in out.state.open_loops] == ["refund 2231"]
    assert [c.name for c in out.skipped] == ["web_search"]
    assert out.results() == [
        {"type": "tool_result", "tool_use_id": "tu1", "content": "ok: establish_fact applied"},
        {"type": "tool_result", "tool_use_id": "tu2", "content": "ok: open_loop applied"},
    ]


def test_dispatch_openai_tool_calls() -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "make_commitment", "arguments": json.dumps({"text": "be brief"})},
        }
    ]
    out = dispatch(TwinState.new("ada", "Dana", at=T0), calls, at=T0)
    assert out.state.commitments == ("be brief",)
    assert out.results() == [
        {"role": "tool", "tool_call_id": "call_1", "content": "ok: make_commitment applied"}
    ]


def test_bad_call_applies_nothing() -> None:
    state = TwinState.new("ada", "Dana", at=T0)
    calls = [
        {"type": "tool_use", "id": "1", "name": "make_commitment", "input": {"text": "x"}},
        {"type": "tool_use", "id": "2", "name": "close_loop", "input": {"loop": "ghost"}},
    ]
    with pytest.raises(InputError, match="loop: unknown loop 'ghost'"):
        dispatch(state, calls, at=T0)
    bad_json = [
        {"id": "c", "type": "function", "function": {"name": "open_loop", "arguments": "{"}}
    ]
    with pytest.raises(InputError, match="not valid JSON"):
        dispatch(state, bad_json, at=T0)
    deep = "[" * 100_000 + "]" * 100_000  # deeper than the parser recurses: bad, not a crash
    deep_json = [
        {"id": "d", "type": "function", "function": {"name": "open_loop", "arguments": deep}}
    ]
    with pytest.raises(InputError, match="not valid JSON"):
        dispatch(state, deep_json, at=T0)
    assert state.commitments == ()
