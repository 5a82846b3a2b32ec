"""Properties of the LangChain conversion and handoff over generated agent histories: the
round trip gives back the very message objects, a handoff leaves no tool traffic or thinking
before the cut and the part after it untouched, and a second handoff changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ipse.adapters.langchain import from_conversation, hand_off, newest_checkpoint, to_conversation

TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@st.composite
def histories(draw: Any) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(1, 3))):
        messages.append(HumanMessage(draw(TEXT)))
        for _ in range(draw(st.integers(0, 3))):
            names = draw(
                st.lists(st.sampled_from(["read", "micro_handoff"]), min_size=1, max_size=2)
            )
            calls = [
                {
                    "name": n,
                    "args": {"done": [], "open": []},
                    "id": f"c{next(ids)}",
                    "type": "tool_call",
                }
                for n in names
            ]
            parts: list[Any] = []
            if draw(st.booleans()):
                parts.append({"type": "thinking", "thinking": draw(TEXT), "signature": "s"})
            if draw(st.booleans()):
                parts.append({"type": "text", "text": draw(TEXT)})
            content: Any = parts if parts or draw(st.booleans()) else ""
            messages.append(AIMessage(content=content, tool_calls=calls))
            messages.extend(ToolMessage(draw(TEXT), tool_call_id=c["id"]) for c in calls)
        messages.append(AIMessage(draw(TEXT)))
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_round_trip_and_handoff(messages: list[BaseMessage]) -> None:
    conversation = to_conversation(messages)
    back = from_conversation(conversation, conversation, messages)
    assert all(a is b for a, b in zip(back, messages, strict=True))

    found = newest_checkpoint(messages)
    if found is None:
        return
    _, cut = found
    out, done = hand_off(messages, cut, session="p")
    tail = len(messages) - cut
    assert all(a is b for a, b in zip(out[len(out) - tail :], messages[cut:], strict=True))
    for message in out[: len(out) - tail]:
        if isinstance(message, AIMessage):
            assert {c["name"] for c in message.tool_calls} <= {"micro_handoff"}
            assert not any(
                isinstance(p, dict) and p.get("type") == "thinking"
                for p in (message.content if isinstance(message.content, list) else [])
            )
    assert done.verdict.ok

    again = newest_checkpoint(out)
    assert again is not None and again[0] == found[0]
    out2, done2 = hand_off(out, again[1], session="p")
    assert not done2.report.removed
    assert all(a is b for a, b in zip(out2, out, strict=True))
