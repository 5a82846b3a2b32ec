"""Generated OpenAI Responses request bodies, shared by the round-trip and the strip tests.

The bodies are valid Responses input: every call answered by an output with its ``call_id``
(or pending in the last turn), reasoning before calls, hosted tool calls without outputs,
unknown items passed through; ``extra`` adds the keys real bodies carry (``id``, ``status``,
``annotations``) so the round trip has more to keep.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from hypothesis import strategies as st

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
WORDS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=SURROGATES), min_size=1, max_size=12
)
IMAGE_PART = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}


def user_message(text: str, *, as_string: bool = False) -> dict[str, Any]:
    if as_string:
        return {"role": "user", "content": text}
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(call_id: str, name: str, arguments: str = '{"cmd":"ls"}') -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def custom_call(call_id: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": "*"}


def function_output(call_id: str, output: Any = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def reasoning(summary: str | None) -> dict[str, Any]:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "summary": parts, "encrypted_content": "gAAAA-opaque"}


@st.composite
def _calls(draw: st.DrawFn, ids: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One round of calls and their outputs."""
    calls: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 2))):
        call_id = f"call_{next(ids)}"
        if draw(st.booleans()):
            name = draw(st.sampled_from(["shell", "micro_handoff"]))
            calls.append(function_call(call_id, name))
            output = draw(
                st.sampled_from(["ok", [{"type": "input_text", "text": "out"}, IMAGE_PART]])
            )
            outputs.append(function_output(call_id, output))
        else:
            calls.append(
                {
                    "type": "custom_tool_call",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": "*",
                }
            )
            outputs.append({"type": "custom_tool_call_output", "call_id": call_id, "output": "ok"})
    if draw(st.booleans()):
        calls.append(
            {
                "type": "web_search_call",
                "id": f"ws_{next(ids)}",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            }
        )
    return calls, outputs


@st.composite
def responses_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A Responses request body with one to four turns."""
    ids = itertools.count()
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append(
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": draw(WORDS)}],
            }
        )
    turns = draw(st.integers(1, 4))
    for turn in range(turns):
        items.append(user_message(draw(WORDS), as_string=draw(st.booleans())))
        if draw(st.booleans()):
            items[-1] = {**items[-1], "content": [*_parts(items[-1]), IMAGE_PART]}
        if draw(st.integers(0, 5)) == 0:
            items.append({"type": "item_reference", "id": f"msg_{next(ids)}"})
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                items.append(reasoning(draw(st.one_of(st.none(), WORDS))))
            if draw(st.booleans()):
                items.append(assistant_message(draw(WORDS)))
            calls, outputs = draw(_calls(ids))
            items.extend(calls)
            last = turn == turns - 1
            if last and draw(st.integers(0, 3)) == 0:
                return _body(draw, items)  # pending: the calls' outputs come next request
            items.extend(outputs)
        items.append(assistant_message(draw(WORDS)))
    return _body(draw, items)


def _parts(message: dict[str, Any]) -> list[Any]:
    content = message["content"]
    return [{"type": "input_text", "text": content}] if isinstance(content, str) else content


def _body(draw: st.DrawFn, items: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-5"}
    if draw(st.booleans()):
        body["instructions"] = draw(WORDS)
    body["input"] = items
    if draw(st.booleans()):
        body["tools"] = [{"type": "function", "name": "shell", "parameters": {}}]
    body["store"] = False
    return body


@st.composite
def extra_keys(draw: st.DrawFn, body: dict[str, Any]) -> dict[str, Any]:
    """The body with ids and statuses on some items and extra keys on some parts."""
    items = []
    for n, item in enumerate(body["input"]):
        item = dict(item)
        if draw(st.booleans()):
            item["id"] = f"item_{n}"
        if draw(st.booleans()):
            item["status"] = "completed"
        items.append(item)
    return {**body, "input": items}
