"""Property tests over generated conversations: valid output, every authored text kept,
idempotence (in memory and through the written JSON), and determinism; and the same of the
whole handoff (`run`): its marker at the cut (once, exactly when something left the context,
valid in every dialect, its ledger naming removed calls only) and its budget (only agent
narration paged, every paged text in the archived page byte for byte, the budget met unless
every agent message was paged)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.errors import InvalidConversation
from ipse.handoff import HandoffOptions, run, strip, validate, verify
from ipse.handoff._marker import TAG
from ipse.handoff._measure import body_bytes
from ipse.handoff._strip import StripOptions
from ipse.transcript._codec import codec
from ipse.transcript._formats import anthropic, openai_chat, openai_responses
from ipse.transcript._model import Conversation, Text, Thinking
from tests.handoff.build import IMAGE, oa_call, text
from tests.transcript.responses import responses_bodies

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
WORDS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=SURROGATES), min_size=1, max_size=12
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUDGETS = st.one_of(st.none(), st.integers(1, 600))


@st.composite
def anthropic_bodies(draw: st.DrawFn) -> dict[str, Any]:
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        human: list[dict[str, Any]] = [
            text(w) for w in draw(st.lists(WORDS, min_size=1, max_size=2))
        ]
        if draw(st.booleans()):
            human.append(IMAGE)
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(human)  # results first, then the human's words
        else:
            messages.append({"role": "user", "content": human})
        for _ in range(draw(st.integers(0, 3))):
            content: list[dict[str, Any]] = []
            if draw(st.booleans()):
                content.append({"type": "thinking", "thinking": draw(WORDS), "signature": "s"})
            content.extend(text(w) for w in draw(st.lists(WORDS, max_size=2)))
            calls = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(ids)}",
                    "name": draw(st.sampled_from(["Bash", "Read", "micro_handoff"])),
                    "input": {"arg": draw(WORDS)},
                }
                for _ in range(draw(st.integers(1, 2)))
            ]
            messages.append({"role": "assistant", "content": content + calls})
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": c["id"],
                    "content": draw(st.sampled_from(["ok", [text("out"), IMAGE]])),
                }
                for c in calls
            ]
            messages.append({"role": "user", "content": results})
        messages.append(
            {
                "role": "assistant",
                "content": [text(w) for w in draw(st.lists(WORDS, min_size=1, max_size=2))],
            }
        )
    ending = draw(st.sampled_from(["done", "pending", "answered"]))
    if ending != "done":
        call = {"type": "tool_use", "id": f"toolu_{next(ids)}", "name": "Bash", "input": {}}
        messages.append({"role": "assistant", "content": [text("last"), call]})
        if ending == "answered":
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "x"}],
                }
            )
    return {"model": "m", "messages": messages}


@st.composite
def openai_bodies(draw: st.DrawFn) -> dict[str, Any]:
    ids = itertools.count()
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for _ in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": draw(WORDS)})
        for _ in range(draw(st.integers(0, 3))):
            calls = [
                oa_call(f"call_{next(ids)}", draw(st.sampled_from(["bash", "micro_handoff"])))
                for _ in range(draw(st.integers(1, 2)))
            ]
            content = draw(st.one_of(st.none(), WORDS))
            message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
            if draw(st.booleans()):
                message["reasoning_content"] = draw(WORDS)
            messages.append(message)
            messages.extend(
                {"role": "tool", "tool_call_id": c["id"], "content": draw(WORDS)} for c in calls
            )
        messages.append({"role": "assistant", "content": draw(WORDS)})
    return {"model": "m", "messages": messages}


def _cuts(draw: Callable[..., Any], conversation: Conversation) -> Any:
    return draw(
        st.one_of(
            st.sampled_from(["now", "checkpoint"]),
            st.integers(0, len(conversation.messages)),
        )
    )


def _check(conversation: Conversation, at: Any, options: StripOptions) -> None:
    has_checkpoint = any(c.name == "micro_handoff" for c in conversation.tool_calls())
    if at == "checkpoint" and not has_checkpoint:
        at = "now"
    try:
        after, report = strip(conversation, at, options)
    except InvalidConversation as exc:
        # the refusals allowed: nothing but blank text and tool traffic, so nothing is left;
        # or nothing of the kind before the first answer, so no user message opens the request
        if "[first_not_user]" in str(exc):
            first = next(i for i, m in enumerate(conversation.messages) if m.role == "assistant")
            opening = conversation.messages[:first]
            assert not any(t.text.strip() for m in opening for t in m.of_kind(Text))
            return
        assert "[no_messages]" in str(exc)
        assert not any(t.text.strip() for m in conversation.messages for t in m.of_kind(Text))
        return
    # valid for its provider, no thinking left in the rewritten part
    assert validate(after, rewritten=report.rewritten_out) == list(report.carried_problems)
    assert not any(
        isinstance(b, Thinking) for m in after.messages[: report.rewritten_out] for b in m.blocks
    )
    # every authored text kept, in order, byte for byte; the rest untouched
    verdict = verify(conversation, after, at=report.cut)
    assert verdict.ok and verdict.found_chars == verdict.authored_chars
    # deterministic
    data = body_bytes(after)
    assert body_bytes(strip(conversation, at, options)[0]) == data
    # idempotent, in memory and through the written JSON (what a proxy re-strips)
    again_at = at if at in ("now", "checkpoint") else report.rewritten_out
    again, second = strip(after, again_at, options)
    assert body_bytes(again) == data and second.removed == ()
    dialect = codec(conversation.dialect)
    reread = dialect.read_body(orjson.loads(data))
    if isinstance(again_at, int):
        # read back, a Responses body groups neighbouring assistant items into one message
        part = dialect.write_body(replace(after, messages=after.messages[:again_at]))
        again_at = len(dialect.read_body(part).messages)
    assert body_bytes(strip(reread, again_at, options)[0]) == data


def _check_run(conversation: Conversation, at: Any, options: StripOptions, budget: Any) -> None:
    """The whole handoff: marked, valid, every authored word in the context or the page."""
    if at == "checkpoint" and not any(c.name == "micro_handoff" for c in conversation.tool_calls()):
        at = "now"
    handoff = HandoffOptions(at=at, strip=options, budget=budget)
    try:
        done = run(conversation, handoff, session="s")
    except InvalidConversation:
        return  # the refusals `_check` proves are the allowed ones
    report, after = done.report, done.after
    # valid: no problem but those the untouched part had, and none in the rewritten part
    problems = validate(after, rewritten=report.rewritten_out)
    assert [p.code for p in problems] == [p.code for p in report.carried_problems]
    assert all(p.index is None or p.index >= report.rewritten_out for p in problems)
    # never unmarked: one marker exactly when something left the context
    markers = [t.text for m in after.messages for t in m.of_kind(Text) if t.text.startswith(TAG)]
    assert markers == ([report.marker] if report.removed or report.page else [])
    if done.marked is not None and done.marked.ledger is not None:
        removed = {r.id for r in report.removed}
        assert {e.id for e in done.marked.ledger.entries} <= removed
    # every authored word kept: in the context, or under a budget in the archived page
    assert done.verdict.ok and done.verdict.found_chars == done.verdict.authored_chars
    assert all(conversation.messages[i].role == "assistant" for i, _ in report.paged)
    if done.fitted is not None and not done.fitted.met:
        texts = [
            i for i, m in enumerate(conversation.messages[: report.cut]) if m.role == "assistant"
        ]
        narrated = {
            i for i in texts if any(t.text.strip() for t in conversation.messages[i].of_kind(Text))
        }
        assert {i for i, _ in report.paged} == narrated  # all of it went, and still too much
    # deterministic, and a second handoff of the output changes nothing
    assert run(conversation, handoff, session="s").body == done.body
    if done.fitted is None or done.fitted.met:
        again_at = at if at in ("now", "checkpoint") else report.rewritten_out
        again = run(after, replace(handoff, at=again_at), session="s")
        assert again.body == done.body and again.report.marker is None


@SETTINGS
@given(data=st.data(), body=anthropic_bodies())
def test_anthropic_properties(data: st.DataObject, body: dict[str, Any]) -> None:
    conversation = anthropic.read_body(body)
    at = _cuts(data.draw, conversation)
    options = StripOptions(
        join_texts=data.draw(st.booleans()),
        promote_thinking=data.draw(st.booleans()),
        breadcrumbs=data.draw(st.booleans()),
    )
    _check(conversation, at, options)
    _check_run(conversation, at, options, data.draw(BUDGETS))


@SETTINGS
@given(data=st.data(), body=openai_bodies())
def test_openai_chat_properties(data: st.DataObject, body: dict[str, Any]) -> None:
    conversation = openai_chat.read_body(body)
    at = _cuts(data.draw, conversation)
    options = StripOptions(
        promote_thinking=data.draw(st.booleans()), breadcrumbs=data.draw(st.booleans())
    )
    _check(conversation, at, options)
    _check_run(conversation, at, options, data.draw(BUDGETS))


@SETTINGS
@given(data=st.data(), body=responses_bodies())
def test_openai_responses_properties(data: st.DataObject, body: dict[str, Any]) -> None:
    conversation = openai_responses.read_body(body)
    at = _cuts(data.draw, conversation)
    options = StripOptions(
        join_texts=data.draw(st.booleans()),
        promote_thinking=data.draw(st.booleans()),
        breadcrumbs=data.draw(st.booleans()),
    )
    _check(conversation, at, options)
    _check_run(conversation, at, options, data.draw(BUDGETS))


def test_a_blank_opening_user_message_is_refused_by_name() -> None:
    """Found by the property test: an opening user message of nothing but a blank text (which
    Anthropic refuses, and stripping drops) left the assistant opening the request, and the
    refusal blamed the output."""
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": " "}]},
            {"role": "assistant", "content": [{"type": "text", "text": "0"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "last"},
                    {"type": "tool_use", "id": "toolu_0", "name": "Bash", "input": {}},
                ],
            },
        ],
    }
    conversation = anthropic.read_body(body)
    try:
        strip(conversation, "now")
    except InvalidConversation as exc:
        assert "opening user message holds nothing but blank text" in str(exc)
    else:
        raise AssertionError("a request opened by the assistant was not refused")
    body["messages"][0]["content"][0]["text"] = "hi"  # type: ignore[index]
    after, _ = strip(anthropic.read_body(body), "now")
    assert after.messages[0].role == "user"
