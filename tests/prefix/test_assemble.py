"""The Assembler's guarantees, as properties: appending never changes what came before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.errors import PrefixEdit, UsageError
from ipse.prefix._assemble import Assembler
from ipse.prefix._hashing import Flattener
from ipse.prefix._report import analyze
from ipse.prefix._requests import Request
from ipse.prefix._rules import rules

from .util import T0, TOOLS

text = st.text(min_size=1, max_size=40)
json_scalars = st.one_of(st.integers(-(2**63), 2**63 - 1), text, st.booleans(), st.none())
inputs = st.dictionaries(text, json_scalars, max_size=4)
blocks = st.one_of(
    st.builds(lambda t: {"text": t, "type": "text"}, text),
    st.builds(
        lambda i, name, args: {"type": "tool_use", "id": i, "name": name, "input": args},
        text,
        text,
        inputs,
    ),
)
messages = st.tuples(
    st.sampled_from(["user", "assistant"]),
    st.one_of(text, st.lists(blocks, min_size=1, max_size=3)),
)


def _assembler(dialect: Any = "anthropic") -> Assembler:
    return Assembler(
        dialect, "claude-sonnet-4-5", system="You are careful. " * 400, tools=TOOLS, ttl="1h"
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.lists(messages, min_size=1, max_size=6))
def test_appending_never_changes_the_bytes_before(
    first: list[tuple[str, Any]], more: list[tuple[str, Any]]
) -> None:
    for dialect in ("anthropic", "openai"):
        assembler = _assembler(dialect)
        for role, content in first:
            assembler.append(role, content)
        before = assembler.prefix_bytes()
        earlier = [orjson.dumps(m) for m in assembler.messages]
        for role, content in more:
            assembler.append(role, content)
        assert assembler.prefix_bytes().startswith(before)
        assert [orjson.dumps(m) for m in assembler.messages[: len(earlier)]] == earlier


@settings(max_examples=40, deadline=None)
@given(st.lists(messages, min_size=2, max_size=8))
def test_each_request_extends_the_cached_prefix_of_the_one_before(
    history: list[tuple[str, Any]],
) -> None:
    assembler = _assembler()
    flattener = Flattener(rules("anthropic"))
    previous: Sequence[int] | None = None
    for role, content in history:
        assembler.append(role, content)
        body = assembler.request()
        assert len([1 for b in _marked(body)]) <= 4
        chain = flattener.flatten(body).chain
        if previous is not None:
            assert chain[: len(previous)] == previous
        previous = chain


def _marked(body: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for part in (body.get("tools", []), body.get("system", [])):
        found.extend(b for b in part if "cache_control" in b)
    for message in body["messages"]:
        if isinstance(message["content"], list):
            found.extend(b for b in message["content"] if "cache_control" in b)
    return found


@given(inputs)
def test_serialization_is_deterministic_whatever_the_key_order(value: dict[str, Any]) -> None:
    reordered = dict(reversed(list(value.items())))
    a, b = _assembler(), _assembler()
    a.append("user", [{"type": "tool_use", "id": "x", "name": "run", "input": value}])
    b.append("user", [{"input": reordered, "name": "run", "id": "x", "type": "tool_use"}])
    assert a.to_bytes() == b.to_bytes()


def test_values_json_cannot_carry_are_refused() -> None:
    with pytest.raises(UsageError):
        _assembler().append("user", [{"type": "text", "text": "x", "n": {1, 2}}])


def test_integers_beyond_64_bits_are_carried_exact() -> None:
    assembler = _assembler()
    assembler.append("user", [{"type": "text", "text": "x\ud800", "n": 2**70 + 1}])
    assert assembler.messages[0]["content"][0]["n"] == 2**70 + 1


def test_editing_history_raises_unless_forced() -> None:
    assembler = _assembler()
    assembler.append("user", "hello")
    assembler.append("assistant", "hi")
    assembler.append("user", "do it")
    with pytest.raises(PrefixEdit, match="append a correction"):
        assembler.edit(0, "hello again")
    cost = assembler.edit(0, "hello again", force=True)
    assert cost.tokens > 0 and cost.invalidates == "messages"
    assert assembler.messages[0]["content"] == "hello again"


def test_front_changes_report_their_cost() -> None:
    assembler = _assembler()
    assembler.append("user", "hello " * 200)
    body_tokens = Flattener(rules("anthropic")).flatten(assembler.request()).total
    tools = assembler.set_tools(TOOLS[:2])
    assert tools.invalidates == "everything" and tools.tokens == body_tokens
    system = assembler.set_system("Another prompt. " * 50)
    assert 0 < system.tokens < body_tokens
    thinking = assembler.set_settings(thinking={"type": "enabled", "budget_tokens": 1024})
    assert thinking.invalidates == "messages" and 0 < thinking.tokens < system.tokens
    assert assembler.set_settings(max_tokens=100).invalidates == "nothing"
    assert assembler.set_model("claude-opus-4-1").usd > 0


def test_breakpoints_placed_and_ttls_in_order() -> None:
    assembler = _assembler()
    for n in range(3):
        assembler.append("user", f"question {n}")
        assembler.append("assistant", f"answer {n}")
    assembler.append("user", "last")
    body = assembler.request()
    marks = _marked(body)
    assert len(marks) == 3
    assert marks[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert all(m["cache_control"] == {"type": "ephemeral"} for m in marks[1:])
    from ipse.prefix._lint import lint

    assert lint(body) == []


def test_assembled_sessions_lose_nothing_in_the_simulator() -> None:
    assembler = _assembler()
    bodies = []
    for n in range(6):
        assembler.append("user", f"question {n} " + "context " * 50)
        bodies.append(assembler.request())
        assembler.append("assistant", f"answer {n}")
    from datetime import timedelta

    reqs = [
        Request(i, b, "anthropic", T0 + timedelta(seconds=30 * i)) for i, b in enumerate(bodies)
    ]
    report = analyze(reqs, tokenizer="bytes")
    assert all(r.cause is None for r in report.rows)
    assert all(r.predicted.cache_read > 0 for r in report.rows[1:])
