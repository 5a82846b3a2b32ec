"""The strip rules on small hand-made conversations, Anthropic and OpenAI chat."""

from __future__ import annotations

import orjson
import pytest

from ipse.handoff import strip, validate, verify
from ipse.handoff._strip import StripOptions
from ipse.transcript import write
from ipse.transcript._formats import anthropic
from ipse.transcript._model import Other, Text, Thinking, ToolCall
from tests.handoff.build import (
    IMAGE,
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

NOTES = "Handoff notes\nDone:\n- parser fixed"


def session_with_checkpoint() -> list[dict[str, object]]:
    return [
        user(text("Fix the parser."), IMAGE),
        assistant(thinking("plan"), text("I will read it."), call("t1", command="cat p.py")),
        user(result("t1", [text("def parse(): ..."), IMAGE])),
        assistant(text("Found the bug on line 3."), call("t2", "Edit", path="p.py")),
        user(result("t2", "edited")),
        assistant(text("Checkpoint."), call("h1", "micro_handoff", done=["parser fixed"])),
        user(result("h1", NOTES)),
        assistant(text("Next I run the tests."), call("t3", command="pytest")),
        user(result("t3", "3 passed")),
    ]


def test_checkpoint_cut_removes_traffic_and_keeps_words_and_notes() -> None:
    before = anthropic_conv(*session_with_checkpoint())
    after, report = strip(before)
    assert report.cut_kind == "checkpoint" and report.cut == 7 and report.checkpoint_id == "h1"
    body = write(after)
    assert body["messages"][:3] == [
        {"role": "user", "content": [text("Fix the parser."), IMAGE]},
        {
            "role": "assistant",
            "content": [
                text("I will read it.\n\nFound the bug on line 3.\n\nCheckpoint."),
                call("h1", "micro_handoff", done=["parser fixed"]),
            ],
        },
        {"role": "user", "content": [result("h1", NOTES)]},
    ]
    assert body["messages"][3:] == session_with_checkpoint()[7:]  # after the cut, as it was
    assert [r.id for r in report.removed] == [r.id for r in report.removed if r.id != "h1"]
    assert {r.id for r in report.removed if r.kind == "tool"} == {"t1", "t2"}
    assert report.removed_thinking == 1
    assert validate(after, rewritten=report.rewritten_out) == []
    assert verify(before, after, at="checkpoint").ok


def test_removed_items_carry_the_original_dicts() -> None:
    before = anthropic_conv(*session_with_checkpoint())
    _, report = strip(before)
    t1 = next(r for r in report.removed if r.id == "t1")
    assert t1.call == call("t1", command="cat p.py")
    assert t1.result == result("t1", [text("def parse(): ..."), IMAGE])
    assert t1.message == 1 and t1.tool == "Bash"


def test_earlier_handoff_notes_stay() -> None:
    messages = session_with_checkpoint()
    messages += [
        assistant(text("Second checkpoint."), call("h2", "micro_handoff", done=["tests pass"])),
        user(result("h2", "notes 2")),
    ]
    after, report = strip(anthropic_conv(*messages))
    assert report.checkpoint_id == "h2"
    kept = [b.id for _, _, b in after.blocks() if isinstance(b, ToolCall)]
    assert kept == ["h1", "h2"]
    assert validate(after) == []


def test_pending_checkpoint_call_cuts_before_it() -> None:
    messages = session_with_checkpoint()[:6]
    after, report = strip(anthropic_conv(*messages))
    assert report.cut == 5
    assert write(after)["messages"][-1] == messages[-1]
    assert validate(after) == []


def test_now_keeps_the_unfinished_exchange_and_the_one_before_it() -> None:
    messages = [*session_with_checkpoint()[:5], assistant(text("Run."), call("t9", command="x"))]
    before = anthropic_conv(*messages)
    after, report = strip(before, "now")
    assert report.cut == 5
    body = write(after)
    # the exchange right before the cut stays so the roles keep alternating
    assert body["messages"][-3:] == [
        {
            "role": "assistant",
            "content": [
                text("I will read it.\n\nFound the bug on line 3."),
                call("t2", "Edit", path="p.py"),
            ],
        },
        user(result("t2", "edited")),
        messages[-1],
    ]
    assert validate(after, rewritten=report.rewritten_out) == []
    assert verify(before, after, at="now").ok


def test_index_cut_inside_an_exchange_moves_back_to_the_call() -> None:
    before = anthropic_conv(*session_with_checkpoint())
    after, report = strip(before, 2)
    assert report.requested_cut == 2 and report.cut == 1
    assert write(after)["messages"][1:] == session_with_checkpoint()[1:]


def test_options_keep_blocks_promote_thinking_and_breadcrumbs() -> None:
    before = anthropic_conv(*session_with_checkpoint())
    options = StripOptions(join_texts=False, promote_thinking=True, breadcrumbs=True)
    after, report = strip(before, options=options)
    agent = [b.text for b in after.messages[1].blocks if isinstance(b, Text)]
    assert agent == [
        "plan",
        "I will read it.",
        "[Bash: cat p.py; recall t1]",
        "Found the bug on line 3.",
        "[Edit: p.py; recall t2]",
        "Checkpoint.",
    ]
    assert report.promoted == ("plan",)
    assert report.breadcrumbs == ("[Bash: cat p.py; recall t1]", "[Edit: p.py; recall t2]")
    assert not any(isinstance(b, Thinking) for m in after.messages[:3] for b in m.blocks)
    assert verify(before, after).ok


def test_a_blank_thinking_is_archived_not_promoted_into_a_blank_text() -> None:
    """Found by the property tests: a thinking of nothing but whitespace, promoted, was a
    blank text block, which Anthropic refuses, and the handoff failed."""
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "0"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "\r", "signature": "s"},
                    {"type": "tool_use", "id": "toolu_0", "name": "Bash", "input": {"a": "0"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "ok"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "0"}]},
        ],
    }
    before = anthropic.read_body(body)
    options = StripOptions(join_texts=False, promote_thinking=True, breadcrumbs=False)
    after, report = strip(before, "now", options)
    assert report.promoted == ()
    assert [r.kind for r in report.removed] == ["thinking", "tool"]
    assert write(after)["messages"] == [body["messages"][0], body["messages"][3]]
    assert verify(before, after).ok


def test_server_tool_blocks_go_and_documents_from_the_human_stay() -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "data": "spec", "media_type": "text/plain"},
    }
    server_call = {
        "type": "server_tool_use",
        "id": "s1",
        "name": "web_search",
        "input": {"query": "x"},
    }
    server_result = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}
    before = anthropic_conv(
        user(text("Read this."), document),
        assistant(server_call, server_result, text("Done.")),
    )
    after, report = strip(before, 2)
    assert write(after)["messages"] == [
        user(text("Read this."), document),
        {"role": "assistant", "content": [text("Done.")]},
    ]
    assert [(r.kind, r.id, r.call, r.result) for r in report.removed] == [
        ("server_tool", "s1", server_call, server_result)
    ]
    assert any(isinstance(b, Other) for b in after.messages[0].blocks)


def test_string_content_and_neighbouring_users_merge() -> None:
    before = anthropic_conv(
        {"role": "user", "content": "one"},
        assistant(call("a", command="x")),
        user(result("a")),
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "three"},
    )
    after, _ = strip(before, 5)
    assert write(after)["messages"] == [
        {"role": "user", "content": "one\n\ntwo"},
        {"role": "assistant", "content": "three"},
    ]


def test_openai_chat_output_is_valid_for_chat_completions() -> None:
    before = openai_conv(
        oa_user("Fix it."),
        oa_assistant(
            "Looking.", oa_call("c1"), oa_call("c2"), reasoning_content="think", extra={"k": 1}
        ),
        oa_tool("c1", "a"),
        oa_tool("c2", "b"),
        oa_assistant(None, oa_call("c3")),
        oa_tool("c3", "c"),
        oa_assistant("Fixed."),
        oa_user("Thanks."),
    )
    after, report = strip(before, 8)
    body = write(after)
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": "Looking.\n\nFixed.", "extra": {"k": 1}},
        {"role": "user", "content": "Thanks."},
    ]
    assert report.removed_calls == 3
    c1 = next(r for r in report.removed if r.id == "c1")
    assert c1.call == oa_call("c1") and c1.result == oa_tool("c1", "a")
    assert validate(after, "openai-chat", rewritten=report.rewritten_out) == []
    assert verify(before, after).ok


def test_openai_checkpoint_is_kept_with_its_tool_message() -> None:
    before = openai_conv(
        oa_user("Go."),
        oa_assistant("Step.", oa_call("c1")),
        oa_tool("c1"),
        oa_assistant("Saving notes.", oa_call("h", "micro_handoff", '{"done": [], "open": []}')),
        oa_tool("h", "notes"),
    )
    after, report = strip(before)
    assert report.cut == 5
    assert write(after)["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Step.\n\nSaving notes.",
            "tool_calls": [oa_call("h", "micro_handoff", '{"done": [], "open": []}')],
        },
        oa_tool("h", "notes"),
    ]
    assert validate(after) == []


def test_output_bytes_are_deterministic_and_idempotent() -> None:
    before = anthropic_conv(*session_with_checkpoint())
    first, _ = strip(before)
    second, _ = strip(before)
    assert orjson.dumps(write(first)) == orjson.dumps(write(second))
    again, report = strip(first)
    assert again == first and report.removed == ()
    assert orjson.dumps(write(again)) == orjson.dumps(write(first))


@pytest.mark.parametrize("at", [None, "now", 0, 9])
def test_nothing_after_the_cut_changes(at: object) -> None:
    before = anthropic_conv(*session_with_checkpoint())
    after, report = strip(before, at)  # type: ignore[arg-type]
    tail = len(before.messages) - report.cut
    old = write(before)["messages"]
    new = write(after)["messages"]
    assert new[len(new) - tail :] == old[report.cut :]
