"""The fast path for requests rebuilt from a session (one shared history, positions stored
once) gives exactly the analysis of the straightforward path (every request a plain body,
flattened whole)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.prefix import analyze, read_requests
from ipse.prefix._growing import SharedHistory
from ipse.prefix._hashing import Flattener
from ipse.prefix._requests import UNRECORDED_FRONT, Request
from ipse.prefix._rules import rules
from tests.conftest import CLAUDE_CODE, EXAMPLE_SESSION, SHARED
from tests.support.plain import plain_requests

_TEXT = st.text(alphabet="abc xyz\n{}", min_size=0, max_size=30)
_MARK = st.sampled_from(
    [None, None, None, {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]
)


def _block(kind: str, text: str, n: int, mark: Any) -> dict[str, Any]:
    if kind == "text":
        block: dict[str, Any] = {"type": "text", "text": text}
    elif kind == "text-reversed":  # (the same block to the provider as "text")
        block = {"text": text, "type": "text"}
    elif kind == "odd":  # a type that is not a string, a string JSON cannot hold, no marker
        block = {"type": [text], "text": text + "\ud800", "cache_control": None}
    elif kind == "tool_use":
        block = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"c": text}}
    elif kind == "tool_result":
        block = {"type": "tool_result", "tool_use_id": f"t{n}", "content": text}
    elif kind == "image":
        block = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": text},
        }
    else:
        block = {"type": "thinking", "thinking": text, "signature": "s"}
    if mark is not None:
        block["cache_control"] = mark
    return block


@st.composite
def _messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 14))):
        role = draw(st.sampled_from(["user", "assistant", "assistant"]))
        if role == "user" and draw(st.booleans()):
            out.append({"role": "user", "content": draw(_TEXT)})
            continue
        kinds = (
            ["text", "tool_result", "image", "odd"]
            if role == "user"
            else ["text", "text-reversed", "tool_use", "thinking"]
        )
        blocks = [
            _block(draw(st.sampled_from(kinds)), draw(_TEXT), n, draw(_MARK))
            for _ in range(draw(st.integers(0, 3)))
        ]
        out.append({"role": role, "content": blocks})
    return out


def _requests(
    histories: list[list[dict[str, Any]]], gaps: list[int], usage: bool, shared: bool
) -> list[Request]:
    requests: list[Request] = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    fronts: dict[str, dict[str, Any]] = {}  # one per model, shared across histories (a session)
    for number, messages in enumerate(histories):
        for k, message in enumerate(messages):
            if message["role"] != "assistant" or k == 0:
                continue
            index = len(requests)
            time = start + timedelta(seconds=sum(gaps[: index % len(gaps) + 1]) + index)
            model = "claude-sonnet-4-5" if index % 3 else "claude-opus-4-6"
            front = fronts.setdefault(
                model,
                {
                    "model": model,
                    "system": UNRECORDED_FRONT,
                    "cache_control": {"type": "ephemeral"},
                },
            )
            body: Any = (
                SharedHistory(front, messages, k) if shared else {**front, "messages": messages[:k]}
            )
            recorded = (
                {
                    "input_tokens": 3,
                    "cache_read_input_tokens": 40 * k,
                    "cache_creation_input_tokens": 9,
                }
                if usage
                else None
            )
            requests.append(
                Request(index, body, "anthropic", time, time, recorded, f"r{index}", f"c{number}")
            )
    return requests


@settings(max_examples=150, deadline=None)
@given(
    histories=st.lists(_messages(), min_size=1, max_size=3),
    gaps=st.lists(st.sampled_from([1, 30, 400, 4000]), min_size=1, max_size=4),
    usage=st.booleans(),
)
def test_shared_history_gives_the_same_analysis(
    histories: list[list[dict[str, Any]]], gaps: list[int], usage: bool
) -> None:
    plain = _requests(histories, gaps, usage, shared=False)
    fast = _requests(histories, gaps, usage, shared=True)
    if not plain:
        return
    for request in fast:
        assert dict(request.body) == dict(plain[request.index].body)
    one, other = Flattener(rules("anthropic")), Flattener(rules("anthropic"))
    for a, b in zip(plain, fast, strict=True):
        x, y = one.flatten(a.body), other.flatten(b.body)
        for name in ("hashes", "chain", "cum", "ttls", "where", "groups", "marks"):
            assert list(getattr(x, name)) == list(getattr(y, name)), name
        for name in ("model", "settings", "setting_names", "tail", "messages", "breakpoints"):
            assert getattr(x, name) == getattr(y, name), name
    for tokenizer in ("auto", "bytes"):
        expected = analyze(plain, tokenizer=tokenizer).to_json()
        assert analyze(fast, tokenizer=tokenizer).to_json() == expected


@SHARED
@pytest.mark.parametrize("name", sorted(p.name for p in CLAUDE_CODE.glob("*.jsonl")))
def test_shared_sessions_analyse_as_plain_bodies(name: str) -> None:
    log = read_requests(CLAUDE_CODE / name, "claude-code")
    assert all(isinstance(r.body, SharedHistory) for r in log.requests)
    plain = plain_requests(log.requests)
    assert analyze(log.requests).to_json() == analyze(plain).to_json()


def test_a_history_ipse_built_is_not_checked_again(tmp_path: Any) -> None:
    """Messages read as sent are checked (a message that is not an object is refused); those
    of a history ipse built from checked records (`SharedHistory.checked`) are not, and a
    session's rebuilt requests say so."""
    from ipse.errors import InputError
    from ipse.prefix._requests import _check_messages

    front = {"model": "claude-sonnet-4-5", "system": UNRECORDED_FRONT}
    odd: list[Any] = [{"role": "user", "content": "hi"}, 7]
    with pytest.raises(InputError, match="a message must be a JSON object"):
        _check_messages(Request(0, SharedHistory(front, odd, 2), "anthropic"), tmp_path, {})
    _check_messages(
        Request(0, SharedHistory(front, odd, 2, checked=True), "anthropic"), tmp_path, {}
    )
    tail = SharedHistory(front, odd, 1, tail=(7,), checked=True)  # (a tail is its own)
    with pytest.raises(InputError, match="a message must be a JSON object"):
        _check_messages(Request(0, tail, "anthropic"), tmp_path, {})
    requests = read_requests(EXAMPLE_SESSION).requests
    assert requests and all(isinstance(r.body, SharedHistory) and r.body.checked for r in requests)


_ITEM = st.one_of(
    st.builds(
        lambda r, t: {"role": r, "content": t}, st.sampled_from(["user", "assistant"]), _TEXT
    ),
    st.builds(
        lambda r, parts: {"role": r, "content": [{"type": "input_text", "text": p} for p in parts]},
        st.sampled_from(["user", "developer"]),
        st.lists(_TEXT, max_size=2),
    ),
    st.builds(
        lambda t: {"type": "function_call", "call_id": "c", "name": "shell", "arguments": t}, _TEXT
    ),
    st.builds(lambda t: {"type": "reasoning", "summary": [], "encrypted_content": t}, _TEXT),
    st.builds(lambda t: {"role": 7, "content": t}, _TEXT),  # (a role that is not a string)
    _TEXT,  # (an item that is not an object)
)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(_ITEM, min_size=1, max_size=12), cuts=st.lists(st.integers(1, 12)))
def test_a_shared_history_of_whole_messages_flattens_as_plain_bodies(
    items: list[Any], cuts: list[int]
) -> None:
    """OpenAI's positions (one a message or input item): a shared history's, appended in one
    step each, are exactly those of the same bodies flattened whole."""
    front = {"model": "gpt-5.2", "instructions": "be brief"}
    one, other = Flattener(rules("openai")), Flattener(rules("openai"))
    for count in sorted({min(c, len(items)) for c in cuts} | {len(items)}):
        x = one.flatten({**front, "input": items[:count]})
        y = other.flatten(SharedHistory(front, items, count, key="input"))
        for name in ("hashes", "chain", "cum", "ttls", "where", "groups", "marks"):
            assert list(getattr(x, name)) == list(getattr(y, name)), name
        for name in ("model", "settings", "setting_names", "tail", "messages", "breakpoints"):
            assert getattr(x, name) == getattr(y, name), name
