"""The marker at the cut: one text that says what a handoff removed and how to get it back, valid
in every dialect, the same bytes on every request of a conversation, and never unmarked."""

from __future__ import annotations

import copy
from typing import Any

from ipse import jsonio
from ipse.handoff import HandoffOptions, run, validate
from ipse.handoff._ledger import HEADING
from ipse.handoff._marker import TAG
from ipse.handoff._rewrite import clear_cache
from ipse.handoff._strip import StripOptions
from ipse.handoff.wire import rewrite_request
from ipse.transcript import Text
from ipse.transcript._codec import codec
from ipse.transcript._formats import anthropic, openai_chat
from ipse.transcript._model import Origin
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
    user,
)


def _markers(conversation: Any) -> list[str]:
    return [
        b.text
        for m in conversation.messages
        for b in m.blocks
        if isinstance(b, Text) and b.text.startswith(TAG)
    ]


def _history(answer: str = "saved") -> list[dict[str, Any]]:
    return [
        user(text("Fix the parser.")),
        assistant(text("Reading it."), call("t1", "Read", file_path="src/parser.py")),
        user(result("t1", "def parse(): ...")),
        assistant(text("Patching."), call("t2", "Edit", file_path="src/parser.py")),
        user(result("t2", "ok")),
        assistant(text("Checkpoint."), call("cp", "micro_handoff", done=["patched"], open=[])),
        user(result("cp", answer)),
    ]


def test_a_handoff_without_notes_marks_the_cut_once_with_counts_ids_and_recall() -> None:
    before = anthropic_conv(*_history(), assistant(text("Next: tests.")))
    done = run(before, HandoffOptions(), session="session:abc", archive=_Sink())
    [marker] = _markers(done.after)
    assert marker == done.report.marker
    assert marker.startswith(f"{TAG} This handoff removed from the conversation so far: ")
    assert "2 tool calls with their results" in marker
    assert "archived under session session:abc" in marker
    assert "`ipse recall ID --session session:abc`" in marker
    assert "- edited src/parser.py [t2]" in marker  # read, then edited: one entry, newest id
    # at the cut, before the checkpoint's exchange the handoff kept, and before the words of
    # the user turn it joins (the roles must alternate)
    first = done.after.messages[0]
    assert [b.text for b in first.blocks if isinstance(b, Text)] == [marker, "Fix the parser."]
    assert done.verdict.ok and validate(done.after) == []


def test_notes_that_carry_the_ledger_are_the_mark() -> None:
    notes = f"Checkpoint recorded.\n\n{HEADING} (derived by ipse)\nRead:\n- src/parser.py [t1]"
    before = anthropic_conv(*_history(notes), assistant(text("Next: tests.")))
    done = run(before, HandoffOptions(), session="s", archive=_Sink())
    assert _markers(done.after) == [] and done.report.marker is None
    assert done.marked is not None and done.marked.ledger is not None  # (still derived)


def test_without_an_archive_the_marker_says_it_cannot_be_recalled() -> None:
    before = anthropic_conv(*_history(), assistant(text("Next: tests.")))
    marker = run(before, HandoffOptions(), session="s").report.marker
    assert marker is not None and "not archived, so it cannot be recalled" in marker
    assert "archived under session" not in marker


def test_nothing_removed_no_marker() -> None:
    before = anthropic_conv(user(text("hi")), assistant(text("hello")))
    done = run(before, HandoffOptions(at="end"), session="s")
    assert done.report.marker is None and done.after.messages == before.messages


def test_chat_gets_its_own_user_message_between_the_tool_message_and_the_next_turn() -> None:
    before = openai_conv(
        oa_user("Fix it."),
        oa_assistant("Looking.", oa_call("c1", "bash", '{"command": "pytest -q"}')),
        oa_tool("c1", "Exit code: 1\nFAILED t.py::test_a"),
        oa_assistant(None, oa_call("c2", "bash", '{"command": "ls"}')),
        oa_tool("c2", "t.py"),
    )
    done = run(before, HandoffOptions(at="end"), session="s")
    roles = [m.role for m in done.after.messages]
    assert roles == ["user", "assistant", "user"]  # the turn ends with the marker's message
    assert done.after.messages[-1].blocks == (Text(str(done.report.marker), Origin.HARNESS),)
    assert "- `pytest -q` exit 1: t.py::test_a [c1]" in str(done.report.marker)
    assert validate(done.after) == []
    assert openai_chat.write_body(done.after)["messages"][-1]["role"] == "user"


def test_the_proxy_sends_the_same_marker_bytes_on_every_later_request() -> None:
    """Pure in the conversation and the cut: the second request's rewritten prefix is the
    first's byte for byte, marker included, from the cache and rewritten cold."""
    history = [*_history(), assistant(text("Next: tests.")), user(text("go on"))]
    first = {"model": "claude-x", "max_tokens": 9, "messages": history}
    more = [*copy.deepcopy(history), assistant(text("Running them.")), user(text("and?"))]
    second = {**first, "messages": more}
    sink = _Sink()
    clear_cache()
    outs = []
    for body, use_cache in ((first, True), (second, True), (first, False), (second, False)):
        done = rewrite_request(body, "anthropic", archive=sink, session="k", use_cache=use_cache)
        assert done.body is not None and done.marker
        outs.append(done.body["messages"])
    kept = len(outs[0]) - 1  # (the first request's last message is its new turn)
    for out in outs[1:]:
        assert jsonio.dumps(out[:kept]) == jsonio.dumps(outs[0][:kept])
    assert [_dumped_marker(out) for out in outs] == [_dumped_marker(outs[0])] * 4


def _dumped_marker(messages: list[Any]) -> str:
    return next(
        b["text"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "text" and b["text"].startswith(TAG)
    )


def test_breadcrumbs_show_the_recall_id() -> None:
    before = anthropic_conv(*_history(), assistant(text("Next.")))
    done = run(before, HandoffOptions(strip=StripOptions(breadcrumbs=True)), session="s")
    assert done.report.breadcrumbs == (
        "[Read: src/parser.py; recall t1]",
        "[Edit: src/parser.py; recall t2]",
    )


def test_every_dialect_reads_the_marked_body_back_valid() -> None:
    body = {"model": "m", "messages": [*_history(), assistant(text("Next."))]}
    done = run(anthropic.read_body(body), HandoffOptions(), session="s")
    again = codec("anthropic").read_body(jsonio.loads(done.body))
    assert validate(again) == [] and len(_markers(again)) == 1


class _Sink:
    """An archive that keeps ids (the handoff's `ArchiveSink`)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def put(self, session: str, removed: Any, source: str) -> int:
        new = [r.id for r in removed if r.id not in self.ids]
        self.ids += new
        return len(new)
