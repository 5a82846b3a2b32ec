"""The provider rules `validate` checks, and the proof `verify` gives."""

from __future__ import annotations

from typing import Any

import pytest

from ipse.errors import UsageError
from ipse.handoff import strip, validate, verify
from ipse.handoff._strip import FATAL_ANYWHERE, REPAIRABLE
from ipse.handoff._validate import PROBLEM_CODES
from ipse.transcript._formats import openai_responses
from ipse.transcript._model import Conversation, Message, Text
from tests.handoff.build import (
    anthropic_conv,
    assistant,
    call,
    oa_assistant,
    oa_call,
    oa_tool,
    oa_user,
    openai_conv,
    result,
    text,
    thinking,
    user,
)
from tests.transcript.responses import (
    assistant_message,
    function_call,
    function_output,
    reasoning,
    user_message,
)


def codes(conversation: Conversation, **kwargs: Any) -> list[str]:
    return [p.code for p in validate(conversation, **kwargs)]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([assistant(text("hi"))], ["first_not_user"]),
        ([user(text("a")), user(text("b"))], ["roles_not_alternating"]),
        ([user(text("a")), {"role": "robot", "content": "x"}], ["bad_role"]),
        ([user(text("a")), {"role": "system", "content": []}, assistant(text("b"))], []),
        (
            [user(text("a")), {"role": "system", "content": "x"}, user(text("c"))],
            ["roles_not_alternating"],
        ),
        ([user()], ["empty_content"]),
        ([user(text(""))], ["empty_text"]),
        ([user(text("a")), assistant(call("x")), user(text("b"))], ["unanswered_call"]),
        ([user(result("zz"))], ["orphan_result"]),
        (
            [
                user(text("a")),
                assistant(call("x")),
                user(result("x")),
                assistant(text("b")),
                user(result("x")),
            ],
            ["misplaced_result"],
        ),
        (
            [user(text("a")), assistant(call("x")), user(text("b"), result("x"))],
            ["result_not_first"],
        ),
        ([user(call("x"))], ["misplaced_call"]),
        (
            [
                user(text("a")),
                assistant(call("x")),
                user(result("x")),
                assistant(call("x")),
                user(result("x")),
            ],
            ["duplicate_call_id"],
        ),
    ],
)
def test_anthropic_rules(messages: list[dict[str, object]], expected: list[str]) -> None:
    assert codes(anthropic_conv(*messages)) == expected


def test_a_pending_call_at_the_end_is_not_a_problem() -> None:
    assert codes(anthropic_conv(user(text("a")), assistant(call("x")))) == []


def test_thinking_in_the_rewritten_part_is_a_problem() -> None:
    conversation = anthropic_conv(user(text("a")), assistant(thinking(), text("b")))
    assert codes(conversation) == []
    assert codes(conversation, rewritten=2) == ["thinking_in_rewritten"]


def test_no_messages() -> None:
    assert codes(anthropic_conv()) == ["no_messages"]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([oa_user("a"), oa_assistant("b", oa_call("c")), oa_tool("c"), oa_assistant("d")], []),
        ([oa_user("a"), oa_assistant("b", oa_call("c")), oa_tool("c"), oa_user("d")], []),
        ([oa_user("a"), oa_assistant("b", oa_call("c")), oa_user("d")], ["unanswered_call"]),
        ([oa_user("a"), oa_tool("zz")], ["orphan_result"]),
        ([oa_assistant("a")], ["first_not_user"]),
        ([oa_user("a"), oa_user("b")], ["roles_not_alternating"]),
        ([oa_user("a"), {"role": "exit", "content": "x"}], ["bad_role"]),
        ([oa_user("a"), oa_assistant(None)], ["empty_content"]),
    ],
)
def test_openai_chat_rules(messages: list[dict[str, object]], expected: list[str]) -> None:
    assert codes(openai_conv(*messages)) == expected


def test_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        validate(anthropic_conv(user(text("a"))), "gemini")


def _session() -> Conversation:
    return anthropic_conv(
        user(text("Do it.")),
        assistant(text("Reading."), call("t1")),
        user(result("t1")),
        assistant(text("Done.")),
    )


def test_verify_accepts_a_strip() -> None:
    before = _session()
    after, _report = strip(before, 4)
    verdict = verify(before, after, at=4)
    assert (
        verdict.ok
        and verdict.checked_texts == 3
        and verdict.found_chars == len("Do it.Reading.Done.")
    )


def test_verify_finds_a_lost_word() -> None:
    before = _session()
    after, _ = strip(before, 4)
    agent = after.messages[1]
    changed = Message("assistant", (Text("Reading.\n\nDone"),), "blocks")
    damaged = Conversation((after.messages[0], changed), dialect="anthropic")
    verdict = verify(before, damaged, at=4)
    assert not verdict.ok and [x.preview for x in verdict.lost] == ["Done."]
    assert agent.text == "Reading.\n\nDone."


def test_verify_finds_words_moved_to_another_role() -> None:
    before = _session()
    moved = Conversation(
        (
            Message("user", (Text("Do it."), Text("Reading."))),
            Message("assistant", (Text("Done."),)),
        ),
        dialect="anthropic",
    )
    assert [x.index for x in verify(before, moved).lost] == [1]


def test_verify_finds_a_changed_tail() -> None:
    before = _session()
    after = anthropic_conv(user(text("Do it.")), assistant(text("Reading.\n\nDone!")))
    verdict = verify(before, after, at=2)
    assert not verdict.ok and not verdict.tail_identical


# ------------------------------------------------------------------------- openai-responses


def responses_conv(*items: dict[str, Any]) -> Conversation:
    return openai_responses.read_body({"model": "gpt-5", "input": list(items)})


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([user_message("a"), function_call("c1", "shell"), function_output("c1")], []),
        ([user_message("a"), function_call("c1", "shell")], []),  # pending: the next request
        (
            [user_message("a"), function_call("c1", "shell"), user_message("b")],
            ["unanswered_call"],
        ),
        ([user_message("a"), function_output("zz")], ["orphan_result"]),
        (
            [user_message("a"), function_output("c1"), function_call("c1", "shell")],
            ["misplaced_result"],
        ),
        (
            [user_message("a"), function_call("c1", "s"), function_call("c1", "s")],
            ["duplicate_call_id"],
        ),
        ([user_message("")], ["empty_text"]),
        ([{"type": "message", "role": "critic", "content": "x"}], ["bad_role"]),
        # no alternation rule: two user messages in a row are valid input
        ([user_message("a"), user_message("b"), assistant_message("c")], []),
    ],
)
def test_responses_rules(items: list[dict[str, Any]], expected: list[str]) -> None:
    assert codes(responses_conv(*items)) == expected


def test_responses_reasoning_is_thinking_in_a_rewritten_part() -> None:
    conversation = responses_conv(user_message("a"), reasoning("why"), assistant_message("b"))
    assert codes(conversation, rewritten=2) == ["thinking_in_rewritten"]
    after, report = strip(conversation, "end")
    assert [r.kind for r in report.removed] == ["thinking"]
    assert verify(conversation, after).ok
    assert codes(after, rewritten=report.rewritten_out) == []


def test_strip_speaks_of_problems_in_the_vocabulary() -> None:
    assert set(PROBLEM_CODES) >= REPAIRABLE | FATAL_ANYWHERE
    assert not REPAIRABLE & FATAL_ANYWHERE


def test_verify_without_at_catches_a_changed_tool_result_in_the_untouched_part() -> None:
    """Without --at the untouched part is the identical tail; a tool result changed inside it
    shortens that tail, and must still fail the check (it used to pass)."""
    from ipse.handoff import strip
    from tests.handoff.build import anthropic_conv, assistant, call, result, text, user

    messages = [
        user(text("Fix the build.")),
        assistant(text("Looking."), call("c1")),
        user(result("c1", "error: missing semicolon")),
        assistant(text("Found it."), call("c2")),
        user(result("c2", "build ok")),
        assistant(text("Fixed and built.")),
    ]
    before = anthropic_conv(*messages)
    after, _ = strip(before, 2)
    assert verify(before, after).ok
    from ipse.transcript import write

    written = write(after)["messages"]
    assert written[-2] == user(result("c2", "build ok"))  # in the untouched part
    written[-2] = user(result("c2", "build FAILED"))
    assert not verify(before, anthropic_conv(*written)).ok
