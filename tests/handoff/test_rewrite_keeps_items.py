"""The wire rewrite removes what the handoff removes and nothing else: every other item, part and
id stays exactly as the harness wrote it (property tests over Responses, Anthropic and Chat
Completions bodies). Messages are merged only where the API wants the roles to alternate, and
the record counts them."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ipse.handoff._marker import TAG
from ipse.handoff._rewrite import clear_cache
from ipse.handoff.wire import rewrite_request
from ipse.transcript._formats.openai_responses import CALL_TYPES, HOSTED_TYPES, OUTPUT_TYPES
from tests.handoff.test_properties import anthropic_bodies, openai_bodies
from tests.transcript.responses import WORDS, extra_keys, responses_bodies

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TRAFFIC = CALL_TYPES | OUTPUT_TYPES | HOSTED_TYPES | {"reasoning"}


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def _is_marker(item: Any) -> bool:
    content = item.get("content") if isinstance(item, dict) else None
    return (
        isinstance(content, list)
        and len(content) == 1
        and str(content[0].get("text", "")).startswith(TAG)
    )


def _removed(before: list[Any], after: list[Any], marker: bool) -> list[Any]:
    """The items of ``before`` missing from ``after``; fails unless ``after`` is ``before`` with
    items left out, every one it keeps equal byte for byte and in order, and the one marker
    the handoff puts at the cut when it removed something."""
    assert sum(_is_marker(item) for item in after) == marker
    rest = iter(before)
    removed: list[Any] = []
    for item in (i for i in after if not _is_marker(i)):
        for candidate in rest:
            if _dumps(candidate) == _dumps(item):
                break
            removed.append(candidate)
        else:
            raise AssertionError(f"not an input item, or out of order: {item!r}")
    removed.extend(rest)
    return removed


def _parts(draw: st.DrawFn, kind: str) -> list[dict[str, Any]]:
    return [{"type": kind, "text": w} for w in draw(st.lists(WORDS, min_size=1, max_size=3))]


def _message(draw: st.DrawFn, role: str, ids: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "message", "role": role}
    if role == "assistant" or draw(st.booleans()):
        item["id"] = f"msg_{next(ids)}"
    item["content"] = _parts(draw, "output_text" if role == "assistant" else "input_text")
    return item


@st.composite
def codex_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A body as Codex sends it: the developer message, neighbouring user messages (AGENTS.md,
    the environment, the prompt) with several parts each, turns of reasoning, messages and calls
    with ids, the checkpoint (called directly or through ``exec``) answered, and turns after."""
    ids = itertools.count()
    items: list[dict[str, Any]] = [_message(draw, "developer", ids)]
    items += [_message(draw, "user", ids) for _ in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            items.append(_message(draw, "user", ids))
        for _ in range(draw(st.integers(0, 2))):
            if draw(st.booleans()):
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{next(ids)}",
                        "summary": [],
                        "encrypted_content": "gAAAA",
                    }
                )
            if draw(st.booleans()):
                items.append(_message(draw, "assistant", ids))
            call = f"call_{next(ids)}"
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{next(ids)}",
                    "call_id": call,
                    "name": "exec_command",
                    "arguments": '{"cmd":"ls"}',
                }
            )
            items.append({"type": "function_call_output", "call_id": call, "output": "a.py"})
        items.append(_message(draw, "assistant", ids))
    call = f"call_{next(ids)}"
    if draw(st.booleans()):
        items.append(
            {
                "type": "custom_tool_call",
                "id": f"ctc_{next(ids)}",
                "call_id": call,
                "name": "exec",
                "input": "await tools.mcp__ipse__micro_handoff({done: [], open: []});",
            }
        )
        items.append({"type": "custom_tool_call_output", "call_id": call, "output": "done"})
    else:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{next(ids)}",
                "call_id": call,
                "name": "mcp__ipse__micro_handoff",
                "arguments": '{"done":[],"open":[]}',
            }
        )
        items.append({"type": "function_call_output", "call_id": call, "output": "recorded"})
    for _ in range(draw(st.integers(0, 2))):
        items.append(_message(draw, draw(st.sampled_from(["assistant", "user"])), ids))
    return {
        "model": "gpt-5.6-codex",
        "instructions": "You are Codex.",
        "input": items,
        "stream": True,
        "store": False,
    }


def _check_responses(body: dict[str, Any]) -> None:
    clear_cache()
    out = rewrite_request(body, "openai-responses", use_cache=False)
    assume(out.applied)
    assert out.body is not None
    removed = _removed(body["input"], out.body["input"], out.marker)
    assert out.marker == bool(removed)
    assert {item.get("type") for item in removed} <= TRAFFIC
    assert len([r for r in removed if r.get("type") in CALL_TYPES]) <= out.removed_calls
    assert out.merged == 0
    assert {k: v for k, v in out.body.items() if k != "input"} == {
        k: v for k, v in body.items() if k != "input"
    }


@SETTINGS
@given(body=codex_bodies())
def test_codex_bodies_keep_every_item_they_do_not_lose(body: dict[str, Any]) -> None:
    _check_responses(body)


@SETTINGS
@given(data=st.data(), body=responses_bodies())
def test_responses_bodies_keep_every_item_they_do_not_lose(
    data: st.DataObject, body: dict[str, Any]
) -> None:
    _check_responses(data.draw(extra_keys(body)))


def test_the_prompt_stays_its_own_message_with_its_parts() -> None:
    """The case Codex hit: AGENTS.md and the human's prompt are neighbouring user messages."""
    agents = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /p"},
            {"type": "input_text", "text": "<INSTRUCTIONS>be brief</INSTRUCTIONS>"},
        ],
    }
    prompt = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Fix the parser."}],
    }
    said = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Reading it.", "annotations": []}],
    }
    body = {
        "model": "gpt-5.6-codex",
        "input": [
            agents,
            prompt,
            said,
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "exec_command",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {
                "type": "function_call",
                "id": "fc_2",
                "call_id": "c2",
                "name": "mcp__ipse__micro_handoff",
                "arguments": '{"done":[],"open":[]}',
            },
            {"type": "function_call_output", "call_id": "c2", "output": "recorded"},
        ],
    }
    clear_cache()
    out = rewrite_request(body, "openai-responses", use_cache=False)
    assert out.body is not None
    marker = out.body["input"][3]  # at the cut, before the checkpoint's exchange
    assert _is_marker(marker) and "Other calls: exec_command x1" in marker["content"][0]["text"]
    assert out.body["input"] == [agents, prompt, said, marker, *body["input"][5:]]


def _traffic_free(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") == "tool" or "tool_calls" in message:
        return False
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    kinds = {b.get("type") for b in blocks if isinstance(b, dict)}
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return not kinds & {"tool_use", "tool_result", "thinking", "redacted_thinking"} and all(
        t and t.strip() for t in texts
    )


def _check_messages(body: dict[str, Any], dialect: str) -> None:
    clear_cache()
    out = rewrite_request(body, dialect, use_cache=False)
    assume(out.applied)
    assert out.body is not None
    kept = {_dumps(m) for m in out.body["messages"]}
    untouched = [m for m in body["messages"] if _traffic_free(m)]
    missing = [m for m in untouched if _dumps(m) not in kept]
    # a message that lost nothing changes only when merged with a neighbour of its role, or
    # when the handoff's marker was added to it
    assert len(missing) <= 2 * out.merged + out.marker, missing


@SETTINGS
@given(body=anthropic_bodies())
def test_anthropic_bodies_keep_every_message_they_do_not_lose(body: dict[str, Any]) -> None:
    _check_messages(body, "anthropic")


@SETTINGS
@given(body=openai_bodies())
def test_chat_bodies_keep_every_message_they_do_not_lose(body: dict[str, Any]) -> None:
    _check_messages(body, "openai-chat")
