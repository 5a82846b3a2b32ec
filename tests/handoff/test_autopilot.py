"""The autopilot's rule (`autopilot_step`) and its plan over a conversation (`plan_autopilot`):
nothing below the soft threshold, a nudge once per stretch, a cut at the hard threshold or, once
nudged, at the size that costs least over the long run, only where the cache pays it back, at a
boundary that splits no tool exchange, and a plan that every later request of the conversation
repeats."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse import jsonio
from ipse.errors import UsageError
from ipse.handoff._autopilot import (
    AutopilotPolicy,
    Limits,
    RequestState,
    autopilot_step,
    break_even_size,
    economic_size,
    thresholds,
)
from ipse.handoff._autopilot_plan import json_size, limits_for, plan_autopilot, request_ends
from ipse.handoff._policy import RATES, break_even
from ipse.transcript import Conversation, ToolCall, ToolResult
from ipse.transcript._codec import codec

LIMITS = Limits(window=100_000, max_output=32_000, compaction=67_000)


def state(tokens: int, after: int | None, **kw: Any) -> RequestState:
    return RequestState(tokens=tokens, tokens_after=after, limits=LIMITS, **kw)


# ------------------------------------------------------------------------------------- the rule


def test_the_thresholds_follow_the_agent_clis_compaction_point() -> None:
    found = thresholds(state(10_000, 5_000, requests=20), AutopilotPolicy())
    assert found.limit == 67_000
    assert found.hard == 47_000  # 20,000 below (a tenth of 67,000 is less)
    assert found.soft == 16_750  # a quarter of the limit: the break-even size of 5,000 is less
    early = thresholds(state(10_000, 5_000, requests=1), AutopilotPolicy())
    assert early.soft == 24_167  # 3 requests expected: a cut to 5,000 pays back from 24,167
    big = Limits(window=1_000_000, max_output=128_000, compaction=967_000)
    found = thresholds(RequestState(10_000, 5_000, big), AutopilotPolicy())
    assert found.hard == 967_000 - 96_700


def test_without_a_compaction_point_the_window_less_the_output_bounds_it() -> None:
    assert Limits(window=200_000, max_output=32_000).limit == 168_000
    assert Limits(window=100_000, max_output=90_000).limit == 50_000


def test_the_soft_threshold_is_where_a_cut_pays_back_within_the_expected_requests() -> None:
    rates = RATES["anthropic-5m"]
    for after in (20_000, 50_000):
        for turns in (3, 10, 20):
            size = break_even_size(after, 1.0, rates, turns)
            pays = break_even(size, after, 1.0, rates)[0]
            assert pays is not None and pays <= turns
            late = break_even(size - 2, after, 1.0, rates)[0]  # (a token's rounding aside)
            assert late is not None and late > turns


@given(
    tokens=st.integers(1, 200_000),
    after=st.none() | st.integers(1, 200_000),
    share=st.floats(0, 1),
    requests=st.integers(1, 60),
    since=st.none() | st.integers(0, 10),
    nudged=st.booleans(),
    mode=st.sampled_from(["off", "nudge", "cut"]),
    growth=st.none() | st.floats(0, 20_000),
)
def test_never_worse(
    tokens: int,
    after: int | None,
    share: float,
    requests: int,
    since: int | None,
    nudged: bool,
    mode: Any,
    growth: float | None,
) -> None:
    policy = AutopilotPolicy(mode=mode)
    now = state(tokens, after, cached_share=share, requests=requests, since_cut=since,
                nudged=nudged, growth=growth)  # fmt: skip
    step = autopilot_step(now, policy)
    assert step == autopilot_step(now, policy)  # pure
    if step.action == "nothing":
        return
    assert mode != "off"
    assert tokens >= step.thresholds.soft  # nothing below the soft threshold
    assert after is not None
    turns = break_even(tokens, after, share, policy.rates)[0]
    assert turns is not None and turns <= step.expected  # the cache pays it back
    if step.action == "cut":
        found = step.thresholds
        assert mode == "cut"
        assert tokens >= found.hard or (nudged and found.cut is not None and tokens >= found.cut)
        assert found.cut is None or found.soft <= found.cut <= found.hard
        assert since is None or since >= policy.min_requests
    else:
        assert not nudged


def _cost_per_request(size: float, after: int, growth: float, write: float, read: float) -> float:
    """A conversation growing by ``growth`` a request, cut back to ``after`` at ``size``:
    cached reads a request, and the rewrite of what is kept spread over the requests between
    two cuts."""
    return read * (size + after) / 2 + write * after * growth / (size - after)


@given(after=st.integers(1_000, 300_000), growth=st.floats(10, 20_000))
def test_the_cut_size_is_where_cutting_again_and_again_costs_least(
    after: int, growth: float
) -> None:
    for rates in (RATES["anthropic-5m"], RATES["anthropic-1h"], RATES["openai"]):
        best = economic_size(after, growth, rates)
        cost = _cost_per_request(best, after, growth, rates.write, rates.read)
        for factor in (0.5, 0.8, 0.95, 1.05, 1.25, 2.0):
            other = after + (best - after) * factor
            assert cost <= _cost_per_request(other, after, growth, rates.write, rates.read) + 1e-6


def test_a_nudged_conversation_is_cut_at_the_cut_size_not_before_the_nudge() -> None:
    policy = AutopilotPolicy()
    # growing 1,000 a request, a cut leaving 5,000: least cost at 5,000 + sqrt(25 x 5e6) = 16,181,
    # below the soft threshold (16,750): the cut size is the soft threshold
    now = state(20_000, 5_000, requests=20, growth=1_000.0)
    assert thresholds(now, policy).cut == 16_750
    assert autopilot_step(now, policy).action == "nudge"  # asked first
    nudged = state(20_000, 5_000, requests=21, growth=1_000.0, nudged=True)
    step = autopilot_step(nudged, policy)
    assert step.action == "cut" and "nudged" in step.reason
    assert autopilot_step(nudged, AutopilotPolicy(mode="nudge")).action == "nothing"
    # a cut that leaves more waits longer: 20,000 + sqrt(25 x 2e7) = 42,361
    later = state(40_000, 20_000, requests=21, growth=1_000.0, nudged=True)
    assert thresholds(later, policy).cut == 42_361
    assert autopilot_step(later, policy).action == "nothing"
    # without a growth to go by, only the hard threshold cuts
    assert thresholds(state(40_000, 5_000, nudged=True), policy).cut is None


def test_a_cut_that_leaves_as_much_as_it_found_is_never_made() -> None:
    step = autopilot_step(state(60_000, 59_000), AutopilotPolicy())
    assert step.action == "nothing"
    assert "pays back" in step.reason


def test_explicit_thresholds_win_and_bad_ones_are_refused() -> None:
    policy = AutopilotPolicy(soft=1_000, hard=2_000)
    assert autopilot_step(state(1_500, 100), policy).action == "nudge"
    assert autopilot_step(state(2_500, 100), policy).action == "cut"
    assert autopilot_step(state(2_500, 100), AutopilotPolicy("nudge", 1_000, 2_000)).action == (
        "nudge"
    )
    for bad in ({"soft": 0}, {"soft": 5, "hard": 4}, {"mode": "always"}, {"min_requests": 0}):
        with pytest.raises(UsageError):
            AutopilotPolicy(**bad)


def test_the_window_table_knows_the_models_and_falls_back_by_provider() -> None:
    opus = limits_for("claude-opus-5-5", "anthropic")
    assert (opus.window, opus.max_output) == (1_000_000, 128_000)
    assert limits_for("claude-unknown-9", "anthropic").window == 200_000
    assert limits_for("gpt-5", "openai").window == 400_000
    assert limits_for("claude-opus-5-5", "anthropic", window=100_000).window == 100_000
    from ipse.agents.claude_code import compaction_threshold

    found = limits_for(
        "claude-opus-5-5", "anthropic", compaction=lambda w, o: compaction_threshold(w, {}, o)
    )
    assert found.compaction == 967_000  # what Claude Code 2.1.332 was measured to compact at


# -------------------------------------------------------------------------------------- the plan


def body(turns: int, steps: int, size: int, *, text: int = 20, thinking: bool = False) -> dict:
    """An Anthropic body: ``turns`` prompts, each answered by ``steps`` tool calls whose results
    are ``size`` characters, then a final answer; a new prompt at the end."""
    messages: list[dict[str, Any]] = []
    n = 0
    for t in range(turns):
        messages.append({"role": "user", "content": f"prompt {t} " + "p" * text})
        for s in range(steps):
            n += 1
            content: list[dict[str, Any]] = []
            if thinking and s == 0:
                content.append({"type": "thinking", "thinking": "hm", "signature": "sig"})
            content += [
                {"type": "text", "text": f"step {n} " + "a" * text},
                {"type": "tool_use", "id": f"toolu_{n:03d}", "name": "Read",
                 "input": {"file_path": f"/f{n}"}},
            ]  # fmt: skip
            messages.append({"role": "assistant", "content": content})
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": "x" * size}
            messages.append({"role": "user", "content": [result]})
        messages.append({"role": "assistant", "content": f"done {t}"})
    messages.append({"role": "user", "content": "next"})
    out = {"model": "claude-opus-5-5", "max_tokens": 128000, "system": "s " * 2000,
           "tools": [], "messages": messages}  # fmt: skip
    if thinking:
        out["thinking"] = {"type": "enabled", "budget_tokens": 2000}
    return out


def read(raw: dict) -> Conversation:
    return codec("anthropic").read_body(raw)


def prefix(raw: dict, end: int) -> Conversation:
    return read({**raw, "messages": raw["messages"][: end + 1]})


def test_a_long_tool_loop_is_nudged_then_cut_below_the_limit() -> None:
    raw = body(5, 8, 30_000)
    plan = plan_autopilot(read(raw), AutopilotPolicy(), LIMITS)
    cuts = [e for e in plan.events if e.action == "cut"]
    nudges = [e for e in plan.events if e.action == "nudge"]
    assert len(cuts) >= 3 and len(nudges) >= len(cuts)
    assert all(e.step.tokens < LIMITS.limit for e in plan.events)
    # (a cut before the assistant message of the newest call keeps the exchange before it)
    assert all(e.step.tokens_after is not None and e.step.tokens_after < e.step.tokens / 2
               for e in cuts)  # fmt: skip
    assert plan.cut == cuts[-1].at and plan.anchor and plan.anchor.startswith("autopilot:")
    # each nudge comes in the stretch before the cut that follows it
    assert nudges[0].request < cuts[0].request


@settings(max_examples=40, deadline=None)
@given(
    turns=st.integers(1, 4),
    steps=st.integers(1, 10),
    size=st.integers(1_000, 60_000),
    thinking=st.booleans(),
)
def test_every_later_request_repeats_the_plan(
    turns: int, steps: int, size: int, thinking: bool
) -> None:
    """What the autopilot did at a request is what it finds again at every later one: the
    events of a request's plan are the first events of the next request's plan."""
    raw = body(turns, steps, size, thinking=thinking)
    conversation = read(raw)
    full = plan_autopilot(conversation, AutopilotPolicy(), LIMITS)
    for end in request_ends(conversation.messages):
        seen = plan_autopilot(prefix(raw, end), AutopilotPolicy(), LIMITS)
        assert [e for e in full.events if e.request <= end] == list(seen.events)


@settings(max_examples=40, deadline=None)
@given(
    turns=st.integers(1, 4),
    steps=st.integers(1, 10),
    size=st.integers(1_000, 60_000),
    thinking=st.booleans(),
)
def test_a_cut_splits_no_tool_exchange_and_keeps_a_turns_thinking(
    turns: int, steps: int, size: int, thinking: bool
) -> None:
    conversation = read(body(turns, steps, size, thinking=thinking))
    messages = conversation.messages
    plan = plan_autopilot(conversation, AutopilotPolicy(), LIMITS)
    for event in plan.events:
        if event.action != "cut":
            continue
        before = {b.id for m in messages[: event.at] for b in m.blocks if isinstance(b, ToolCall)}
        after = {b.call_id for m in messages[event.at :] for b in m.blocks
                 if isinstance(b, ToolResult)}  # fmt: skip
        assert not before & after
        kept = messages[event.at]
        assert kept.role == "assistant" or not any(isinstance(b, ToolResult) for b in kept.blocks)
        if thinking and kept.role == "assistant":
            assert kept.blocks[0].kind == "thinking"
        cuts = [e.request for e in plan.events if e.action == "cut"]
        assert all(b - a >= 2 * AutopilotPolicy().min_requests for a, b in itertools.pairwise(cuts))


def test_a_conversation_of_authored_words_is_never_cut() -> None:
    """Nothing to remove: a cut would leave what it found, so it never pays back."""
    raw = body(40, 0, 0, text=6_000)
    plan = plan_autopilot(read(raw), AutopilotPolicy(), LIMITS)
    assert plan.now is not None and plan.now.tokens >= LIMITS.limit
    assert not [e for e in plan.events if e.action == "cut"]


def test_the_agents_own_checkpoint_starts_a_new_stretch() -> None:
    raw = body(1, 6, 30_000)
    messages = raw["messages"]
    call = {"type": "tool_use", "id": "toolu_cp", "name": "mcp__ipse__micro_handoff",
            "input": {"done": ["x"]}}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": "toolu_cp", "content": "saved"}
    at = 9  # after the fourth result
    messages[at + 1 : at + 1] = [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    plan = plan_autopilot(read(raw), AutopilotPolicy(), LIMITS)
    assert plan.trigger == "checkpoint" and plan.cut is None
    assert plan.newest_cut == at + 3
    assert all(n >= at + 3 for n in plan.nudges)


def test_modes() -> None:
    conversation = read(body(3, 8, 30_000))
    off = plan_autopilot(conversation, AutopilotPolicy("off"), LIMITS)
    assert not off.events and not off.acts
    nudge = plan_autopilot(conversation, AutopilotPolicy("nudge"), LIMITS)
    assert [e.action for e in nudge.events] == ["nudge"]
    assert nudge.cut is None and nudge.nudges


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)  # fmt: skip


def _marked(value: Any, marks: list[bool], mark: dict[str, Any]) -> Any:
    """``value`` with a ``cache_control`` key put into the dicts ``marks`` picks, in order."""
    if isinstance(value, list):
        return [_marked(v, marks, mark) for v in value]
    if isinstance(value, dict):
        out = {k: _marked(v, marks, mark) for k, v in value.items() if k != "cache_control"}
        if marks and marks.pop():
            first = bool(marks) and marks.pop()
            out = {"cache_control": mark, **out} if first else {**out, "cache_control": mark}
        return out
    return value


@settings(max_examples=200, deadline=None)
@given(
    value=_JSON,
    marks=st.lists(st.booleans(), max_size=30),
    mark=st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]),
)
def test_a_size_never_counts_the_cache_breakpoints(
    value: Any, marks: list[bool], mark: dict[str, Any]
) -> None:
    plain = _marked(value, [], mark)
    assert json_size(_marked(value, marks, mark)) == len(jsonio.dumps(plain))


def test_where_claude_code_puts_its_breakpoint_changes_no_plan() -> None:
    """Claude Code marks the newest message's last block with ``cache_control`` and takes the
    mark off at the next request: every request's plan of the history before it stays the
    same (the cut the proxy made at an earlier request is the one a later request plans)."""
    raw = body(4, 6, 12_000)
    for message in raw["messages"]:  # (Claude Code sends blocks, never a string)
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"]}]
    ends = request_ends(read(raw).messages)
    previous: list[Any] | None = None
    for end in ends:
        messages = [dict(m) for m in raw["messages"][: end + 1]]
        blocks = messages[-1]["content"]
        mark = {"cache_control": {"type": "ephemeral"}}
        messages[-1]["content"] = [*blocks[:-1], {**blocks[-1], **mark}]
        plan = plan_autopilot(read({**raw, "messages": messages}), AutopilotPolicy(), LIMITS)
        plain = plan_autopilot(prefix(raw, end), AutopilotPolicy(), LIMITS)
        assert plan.tokens == plain.tokens
        events = [e.to_json() for e in plan.events]
        assert events == [e.to_json() for e in plain.events]
        if previous is not None:
            assert events[: len(previous)] == previous
        previous = events
    assert previous and any(e["action"] == "cut" for e in previous)
