"""The autopilot written into request bodies (`ipse.handoff.wire.autopilot_request`), request by
request as an agent CLI sends a conversation: what goes upstream keeps every authored word,
splits no tool exchange, repeats the request before it (the provider's cache keeps hitting)
except where a cut is made, and is what every replica makes of the same body."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse import jsonio
from ipse.handoff._autopilot_body import _MEMOS
from ipse.handoff._autopilot_plan import bytes_per_token, request_ends
from ipse.handoff._shared import NUDGE, AutopilotPolicy, Limits, clear_cache
from ipse.handoff.wire import autopilot_request
from tests.handoff.test_autopilot import LIMITS, body, read


def _requests(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The bodies the client sends, one per request of the conversation."""
    ends = request_ends(read(raw).messages)
    return [{**raw, "messages": raw["messages"][: end + 1]} for end in ends]


def _authored(raw: dict[str, Any]) -> list[str]:
    out = []
    for message in raw["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out += [b["text"] for b in content if b.get("type") == "text"]
    return out


def _forwarded(requests: list[dict[str, Any]], policy: AutopilotPolicy) -> list[Any]:
    out = []
    for sent in requests:
        made = autopilot_request(sent, "anthropic", policy, LIMITS, session="test")
        out.append((made, made.body if made.body is not None else sent))
    return out


POLICIES = (
    AutopilotPolicy(),
    AutopilotPolicy(soft=6_000, hard=15_000),
    AutopilotPolicy(mode="nudge", soft=6_000),
)


@settings(max_examples=25, deadline=None)
@given(
    turns=st.integers(1, 3),
    steps=st.integers(1, 6),
    size=st.integers(2_000, 30_000),
    thinking=st.booleans(),
    policy=st.sampled_from(POLICIES),
)
def test_what_goes_upstream_keeps_the_words_and_the_exchanges_and_repeats_itself(
    turns: int, steps: int, size: int, thinking: bool, policy: AutopilotPolicy
) -> None:
    clear_cache()
    raw = body(turns, steps, size, thinking=thinking)
    requests = _requests(raw)
    forwarded = _forwarded(requests, policy)
    previous: list[Any] | None = None
    for sent, (made, out) in zip(requests, forwarded, strict=True):
        assert not made.invalid, made.reason
        messages = out["messages"]
        words = jsonio.dumps(out).decode()
        for text in _authored(sent):
            assert jsonio.dumps(text).decode()[1:-1] in words
        # every tool result answers a call in the assistant message before it
        for i, message in enumerate(messages):
            content = message["content"]
            results = [b["tool_use_id"] for b in content if isinstance(content, list)
                       and b.get("type") == "tool_result"]  # fmt: skip
            if results:
                before = messages[i - 1]["content"] if i else []
                calls = {b["id"] for b in before if b.get("type") == "tool_use"}
                assert set(results) <= calls
        nudges = sum(1 for m in messages if m["content"] == [{"type": "text", "text": NUDGE}])
        assert nudges <= 1
        if previous is not None and made.action != "cut":
            assert messages[: len(previous)] == previous
        previous = messages
    # a replica that never saw the conversation (its session the same: the conversation key)
    # makes the same bytes of each request: what the one that saw them all remembered of the
    # conversation (its cuts, its plan) changes nothing
    for sent, (_, out) in zip(requests, forwarded, strict=True):
        clear_cache()
        again = autopilot_request(sent, "anthropic", policy, LIMITS, session="test")
        assert (again.body or sent) == out


def _calls(messages: list[Any]) -> set[str]:
    return {b["id"] for m in messages if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"}  # fmt: skip


@settings(max_examples=20, deadline=None)
@given(
    turns=st.integers(1, 3),
    steps=st.integers(1, 6),
    size=st.integers(2_000, 30_000),
    policy=st.sampled_from(POLICIES[:2]),
)
def test_a_recorded_cut_says_what_the_body_it_sends_keeps(
    turns: int, steps: int, size: int, policy: AutopilotPolicy
) -> None:
    """At the request that makes a cut, its recorded size after the cut is the body it sends,
    counted as a plan counts (each message's JSON bytes over `bytes_per_token`: the rounding of
    each message, and the keys around them, are the difference), and the calls it says it
    removed are the calls the client sent that the body leaves out."""
    clear_cache()
    ratio = bytes_per_token()
    requests = _requests(body(turns, steps, size))
    for sent, (made, out) in zip(requests, _forwarded(requests, policy), strict=True):
        if made.action != "cut":
            continue
        messages = out["messages"]
        assert made.tokens_after is not None
        around = {k: v for k, v in out.items() if k not in ("messages", "system", "tools")}
        slack = 2 * len(messages) + 16 + len(jsonio.dumps(around)) / ratio
        assert abs(len(jsonio.dumps(out)) / ratio - made.tokens_after) <= slack
        assert made.removed_calls == len(_calls(sent["messages"]) - _calls(messages))
        assert made.tokens is not None and made.tokens_after < made.tokens


@settings(max_examples=15, deadline=None)
@given(
    turns=st.integers(1, 3),
    steps=st.integers(1, 6),
    size=st.integers(2_000, 30_000),
    policy=st.sampled_from(POLICIES),
    memo=st.booleans(),
)
def test_a_request_sent_again_brings_no_new_cut_nor_nudge(
    turns: int, steps: int, size: int, policy: AutopilotPolicy, memo: bool
) -> None:
    """A client that sends a request again (a retry) gets the same body, and the record marks
    the cut or nudge only at the first: what it made was made there. ``memo``: whether the
    conversation's last plan is still held, or only the cut's prefix."""
    clear_cache()
    for sent in _requests(body(turns, steps, size)):
        first = autopilot_request(sent, "anthropic", policy, LIMITS, session="test")
        if not memo:
            _MEMOS.clear()
        again = autopilot_request(sent, "anthropic", policy, LIMITS, session="test")
        assert (again.body or sent) == (first.body or sent)
        if first.action == "cut" or (first.action == "nudge" and memo):
            assert again.action == "nothing", again.reason
            assert again.anchor == first.anchor
            assert again.tokens_after == first.tokens_after


def test_nudge_only_never_removes_and_off_changes_nothing() -> None:
    clear_cache()
    requests = _requests(body(3, 6, 20_000))
    for sent, (made, out) in zip(
        requests, _forwarded(requests, AutopilotPolicy(mode="nudge")), strict=True
    ):
        assert made.action != "cut"
        kept = [m for m in out["messages"] if m["content"] != [{"type": "text", "text": NUDGE}]]
        assert kept == sent["messages"]
    assert any(made.nudges for made, _ in _forwarded(requests, AutopilotPolicy(mode="nudge")))
    for made, _ in _forwarded(requests, AutopilotPolicy(mode="off")):
        assert made.body is None
    clear_cache()
    cut = [made for made, _ in _forwarded(requests, AutopilotPolicy()) if made.action == "cut"]
    assert cut and all(m.tokens_after is not None and m.tokens_after < m.tokens for m in cut)
    assert all(m.removed_calls > 0 and m.applied for m in cut)


def _chat(turns: int) -> dict[str, Any]:
    """A Chat Completions body: its system message first among the messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a test agent."}]
    for t in range(1, turns + 1):
        call = {
            "id": f"call_{t}",
            "type": "function",
            "function": {"name": "read", "arguments": jsonio.dumps({"p": t}).decode()},
        }
        messages += [
            {"role": "user", "content": f"Prompt {t}"},
            {"role": "assistant", "content": f"Reading {t}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{t}", "content": "x" * 6000},
            {"role": "assistant", "content": f"Answer {t}"},
        ]  # fmt: skip
    messages.append({"role": "user", "content": f"Prompt {turns + 1}"})
    return {"model": "gpt-4.1", "messages": messages}


def test_a_chat_completions_cut_keeps_the_system_message_and_every_word() -> None:
    clear_cache()
    policy = AutopilotPolicy(soft=5_000, hard=9_000)
    bounds = Limits(window=128_000, max_output=16_000)
    cut = False
    for turns in range(1, 10):
        sent = _chat(turns)
        made = autopilot_request(sent, "openai-chat", policy, bounds, session="chat")
        assert not made.invalid, made.reason
        out = made.body or sent
        assert out["messages"][0] == sent["messages"][0]  # the system message, as sent
        words = jsonio.dumps(out).decode()
        for message in sent["messages"]:
            if message["role"] != "tool":  # (authored: the prompts, the answers, the system)
                assert message["content"] in words
        cut = cut or made.anchor is not None
        calls = {c["id"] for m in out["messages"] for c in m.get("tool_calls", [])}
        assert {m["tool_call_id"] for m in out["messages"] if m["role"] == "tool"} <= calls
    assert cut
