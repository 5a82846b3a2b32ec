"""The raw-history operations every codec answers, so that the handoff asks the dialect instead
of testing its name: where the history is, its calls and results, how many raw items a message
stands for, the instructions, and the item that answers a call."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ipse.transcript._codec import DIALECTS, codec
from ipse.transcript._model import ToolCall
from tests.handoff.build import assistant, call, oa_assistant, oa_call, oa_tool, oa_user, text, user
from tests.handoff.build import result as anthropic_result

BODIES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "system": "Be brief.",
        "messages": [user(text("hi")), assistant(call("t1", "Read")), user(anthropic_result("t1"))],
    },
    "openai-chat": {
        "messages": [
            {"role": "system", "content": "Be brief."},
            oa_user("hi"),
            oa_assistant(None, oa_call("t1", "Read")),
            oa_tool("t1"),
        ],
    },
    "openai-responses": {
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "function_call",
                "call_id": "t1",
                "namespace": "mcp__x",
                "name": "Read",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "t1", "output": "ok"},
        ],
    },
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_raw_history_operations(dialect: str) -> None:
    body = BODIES[dialect]
    found = codec(dialect)
    items = body[found.history_key]
    calls = list(found.raw_calls(items))
    assert [(c.id, c.name) for c in calls] == [("t1", "Read")]
    assert [(r.call_id, r.at) for r in found.raw_results(items)] == [("t1", len(items) - 1)]
    assert "Be brief." in str(found.raw_front(body))
    conversation = found.read_body(body)
    assert sum(found.raw_items(m) for m in conversation.messages[-2:]) == 2  # the call, its result
    pending = {**body, found.history_key: items[:-1]}
    last = found.read_body(pending).messages[-1]
    call_block = next(b for b in last.blocks if isinstance(b, ToolCall))
    answered = {**body, found.history_key: [*items[:-1], found.raw_answer(call_block, "done")]}
    results = list(found.raw_results(answered[found.history_key]))
    assert [r.call_id for r in results] == ["t1"]
    assert found.thinking_binds is (dialect == "anthropic")
    if dialect == "openai-responses":
        assert calls[0].namespace == "mcp__x"


def test_the_handoff_never_tests_a_dialect_by_name() -> None:
    """Mechanisms ask the codec; a comparison with a dialect's name is a leak."""
    folder = Path(__file__).resolve().parents[2] / "src" / "ipse" / "handoff"
    leak = re.compile(r"""[!=]=\s*["'](anthropic|openai-chat|openai-responses)["']""")
    found = [
        f"{path.name}:{n}"
        for path in sorted(folder.glob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if leak.search(line)
    ]
    assert found == []
