"""`rewrite_request`: the handoff on the wire, for Anthropic, OpenAI chat and Responses bodies.

Properties over generated conversations: applied only with a checkpoint call, idempotent, every
authored word kept byte for byte, a valid output, and the rewritten prefix byte-identical as the
conversation grows (with and without the prefix cache).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ipse import jsonio
from ipse.handoff import validate, verify
from ipse.handoff._recognise import is_checkpoint
from ipse.handoff._rewrite import binds_thinking, clear_cache
from ipse.handoff.wire import rewrite_request
from ipse.transcript._codec import codec
from tests.handoff.build import assistant, call, result, text, thinking, user
from tests.handoff.test_properties import anthropic_bodies, openai_bodies
from tests.transcript.responses import responses_bodies

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY = {"anthropic": "messages", "openai-chat": "messages", "openai-responses": "input"}


class ListArchive:
    """An archive sink that keeps what it is given (the handoff's `ArchiveSink` protocol)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def put(self, session: str, removed: Any, source: str) -> int:
        new = [(session, r.id) for r in removed if (session, r.id) not in self.items]
        self.items.extend(new)
        return len(new)


def _dump(value: Any) -> bytes:
    return jsonio.dumps(value)


def _check_growth(body: dict[str, Any], dialect: str) -> None:
    key = KEY[dialect]
    raw = body[key]
    if not isinstance(raw, list):
        return
    previous: list[Any] | None = None
    anchor: str | None = None
    for end in range(1, len(raw) + 1):
        grown = {**body, key: copy.deepcopy(raw[:end])}
        cold = rewrite_request(grown, dialect, use_cache=False)
        warm = rewrite_request(grown, dialect, anchor=cold.anchor)
        assert _dump(cold.body) == _dump(warm.body)
        if cold.body is None:
            previous = None
            continue
        out = cold.body[key]
        # valid, every authored word kept, and the tail untouched
        before = codec(dialect).read_body(grown)
        after = codec(dialect).read_body(cold.body)
        assert validate(after, rewritten=0) == [
            p for p in validate(after) if p.code != "thinking_in_rewritten"
        ]
        verdict = verify(before, after)
        assert verdict.ok and verdict.found_chars == verdict.authored_chars
        # idempotent
        again = rewrite_request(cold.body, dialect, use_cache=False)
        assert again.body is not None and _dump(again.body) == _dump(cold.body)
        assert again.removed_calls == 0
        # the prefix of the previous request's rewrite stays byte-identical
        # (a checkpoint call still waiting for its result cuts before it: not yet settled; a
        # request with a call unanswered before its last turn is one the API refuses and no
        # client sends: the handoff removes the call, and its marker counts it without the
        # result that a later request brings)
        if previous is not None and cold.anchor == anchor and cold.settled:
            assert _dump(out[: len(previous) - 1]) == _dump(previous[:-1])
        whole = not any(p.code == "unanswered_call" for p in validate(before))
        previous, anchor = (out if cold.settled and whole else None), cold.anchor


@SETTINGS
@given(body=anthropic_bodies())
def test_anthropic_growth(body: dict[str, Any]) -> None:
    _check_growth(body, "anthropic")


@SETTINGS
@given(body=openai_bodies())
def test_openai_chat_growth(body: dict[str, Any]) -> None:
    _check_growth(body, "openai-chat")


@SETTINGS
@given(body=responses_bodies())
def test_openai_responses_growth(body: dict[str, Any]) -> None:
    _check_growth(body, "openai-responses")


def _session(model: str = "claude-x", *extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "messages": [
            user(text("please fix the bug")),
            assistant(thinking(), text("looking"), call("t1", command="cat a.py")),
            user(result("t1", "print(1)" * 50)),
            assistant(text("noting"), call("cp", "mcp__ipse__micro_handoff", notes="bug in a.py")),
            user(result("cp", "checkpoint saved")),
            assistant(thinking("later"), text("continuing"), call("t2", command="ls")),
            user(result("t2", "a.py")),
            *extra,
        ],
    }


def test_rewrite_removes_tool_traffic_before_the_checkpoint() -> None:
    clear_cache()
    archive = ListArchive()
    out = rewrite_request(_session(), "anthropic", archive=archive, session="s1")
    assert out.body is not None and out.anchor == "cp"
    assert out.checkpoint_tool == "mcp__ipse__micro_handoff"
    messages = out.body["messages"]
    ids = [b.get("id") for m in messages for b in m["content"] if b.get("type") == "tool_use"]
    assert ids == ["cp", "t2"]
    assert out.removed_calls == 1 and out.removed_thinking == 1 and out.archived == 2
    assert ("s1", "t1") in archive.items
    # not a binding model: the kept turns keep their thinking
    assert any(b.get("type") == "thinking" for b in messages[-2]["content"])
    # the next request is served from the cache and keeps the prefix byte for byte
    grown = _session("claude-x", assistant(text("done")), user(text("thanks")))
    again = rewrite_request(grown, "anthropic", anchor=out.anchor)
    assert again.cached
    assert _dump(again.body["messages"][: len(messages)]) == _dump(messages)  # type: ignore[index]


def test_binding_models_lose_thinking_in_kept_turns() -> None:
    out = rewrite_request(_session("claude-opus-5-5"), "anthropic")
    assert out.body is not None and out.kept_thinking_removed == 1
    assert not any(b.get("type") == "thinking" for m in out.body["messages"] for b in m["content"])


@pytest.mark.parametrize(
    ("model", "binds"),
    [
        ("claude-opus-5-5", True),
        ("claude-opus-5-5-20261101", True),
        ("claude-fable-5-1", True),
        ("claude-mythos-5-2", True),
        ("claude-haiku-5-5", True),
        ("claude-opus-6", True),
        ("claude-opus-5", False),
        ("claude-fable-5", False),
        ("claude-sonnet-4-5", False),
        ("claude-opus-4-20250514", False),
        ("us.anthropic.claude-sonnet-5-5-v1:0", True),
        ("SmolLM2", False),
        (None, False),
    ],
)
def test_binds_thinking(model: Any, binds: bool) -> None:
    assert binds_thinking(model) is binds


def test_checkpoint_names() -> None:
    assert is_checkpoint("micro_handoff")
    assert is_checkpoint("mcp__ipse__micro_handoff")
    assert is_checkpoint("mcp__a__b__micro_handoff")
    assert not is_checkpoint("mcp____micro_handoff")
    assert not is_checkpoint("micro_handoff_2")
    assert is_checkpoint("save", ("save",))


def test_nothing_without_a_checkpoint() -> None:
    body = {"model": "m", "messages": [user(text("hi"))]}
    out = rewrite_request(body, "anthropic")
    assert out.body is None and out.reason == "no checkpoint call in the history"


def test_invalid_body_left_untouched() -> None:
    body = _session()
    body["messages"].insert(1, user(result("ghost")))
    out = rewrite_request(body, "anthropic")
    assert out.body is None and out.invalid and out.anchor == "cp"
    assert out.reason is not None and out.reason.startswith("left untouched")


def test_a_failure_that_more_turns_can_fix_is_not_remembered() -> None:
    """Nothing but blank text before the checkpoint: with no turn after it the handoff has
    nothing left to send; once the agent answers, it does. The failure of the short history
    must not be replayed for the grown one."""
    clear_cache()
    short = [user(text(" ")), assistant(call("cp", "micro_handoff", notes="n"))]
    assert rewrite_request({"model": "m", "messages": short}, "anthropic").invalid
    grown = [*short, user(result("cp", "saved")), assistant(text("continuing"))]
    out = rewrite_request({"model": "m", "messages": grown}, "anthropic")
    cold = rewrite_request({"model": "m", "messages": grown}, "anthropic", use_cache=False)
    assert cold.body is not None, cold.reason
    assert out.body == cold.body


def test_a_failure_in_the_rewritten_part_is_remembered() -> None:
    clear_cache()
    history = _session()["messages"]
    history.insert(1, user(result("ghost")))  # an orphan result before the checkpoint
    first = rewrite_request({"model": "m", "messages": history}, "anthropic")
    assert first.invalid
    grown = [*history, assistant(text("more")), user(text("and more"))]
    later = rewrite_request({"model": "m", "messages": grown}, "anthropic")
    assert later.invalid and later.reason == first.reason


def test_claude_code_system_messages_are_kept() -> None:
    body = _session()
    env = {"role": "system", "content": [text("<env>cwd: /tmp</env>")]}
    body["messages"].insert(1, env)
    body["messages"].append({"role": "system", "content": [], "output_config": {"effort": "low"}})
    out = rewrite_request(body, "anthropic", use_cache=False)
    assert out.body is not None, out.reason
    assert out.body["messages"][1] is env
    assert out.body["messages"][-1] == body["messages"][-1]


def test_newer_checkpoint_moves_the_anchor() -> None:
    clear_cache()
    first = rewrite_request(_session(), "anthropic")
    later = _session(
        "claude-x",
        assistant(text("again"), call("cp2", "micro_handoff", notes="n2")),
        user(result("cp2", "saved")),
    )
    out = rewrite_request(later, "anthropic", anchor=first.anchor)
    assert out.anchor == "cp2" and not out.cached
    ids = [b.get("id") for m in out.body["messages"] for b in m["content"] if "id" in b]  # type: ignore[index]
    assert "t2" not in ids and "cp2" in ids


def test_conversation_key() -> None:
    from ipse.handoff._rewrite import conversation_key

    body = _session()
    assert conversation_key({"X-Claude-Code-Session-Id": "abc"}, body, "anthropic") == "session:abc"
    first = conversation_key({}, body, "anthropic")
    grown = _session("claude-x", assistant(text("more")))
    assert conversation_key({}, grown, "anthropic") == first
    other = {**body, "messages": [user(text("another task")), *body["messages"][1:]]}
    assert conversation_key({}, other, "anthropic") != first
    chat = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
    assert conversation_key({}, chat, "openai-chat").startswith("hash:")
    assert conversation_key({}, {"input": "hi"}, "openai-responses").startswith("hash:")
    codex = {"input": "hi", "prompt_cache_key": "c1"}
    assert conversation_key({}, codex, "openai-responses") == "cache-key:c1"
    assert conversation_key({"session-id": "s9"}, codex, "openai-responses") == "session:s9"


def _captured() -> list[Any]:
    from tests.conftest import HTTP_LOG, shared_glob

    return shared_glob(HTTP_LOG, "*.json")


@pytest.mark.shared
@pytest.mark.parametrize("path", _captured(), ids=lambda p: p.name)
def test_real_claude_code_requests(path: Any) -> None:
    """Claude Code's captured requests, with a checkpoint call put after their first half:
    handed off into valid bodies that keep every authored word, the tail untouched."""
    body = jsonio.loads(path.read_bytes())["request"]["content"]
    messages = body["messages"]

    def calls(message: dict[str, Any]) -> bool:
        content = message.get("content")
        return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)

    half = len(messages) // 2
    while half < len(messages) and (
        messages[half - 1]["role"] != "assistant" or calls(messages[half - 1])
    ):
        half += 1
    if half >= len(messages) or messages[half]["role"] != "user":
        pytest.skip("no text-only assistant turn followed by a user turn to put a checkpoint after")
    checkpoint = [
        {"role": "user", "content": "checkpoint please"},
        assistant(text("saving"), call("toolu_ipse_cp", "micro_handoff", notes="n")),
        user(result("toolu_ipse_cp", "saved")),
        assistant(text("resuming")),
    ]
    grown = {**body, "messages": [*messages[:half], *checkpoint, *messages[half:]]}
    out = rewrite_request(grown, "anthropic", use_cache=False)
    assert out.body is not None, out.reason
    after = codec("anthropic").read_body(out.body)
    assert validate(after) == []
    verdict = verify(codec("anthropic").read_body(grown), after)
    assert verdict.ok and verdict.found_chars == verdict.authored_chars
    assert out.body["messages"][-len(messages[half:]) :] == messages[half:]
    assert out.body["system"] == body["system"] and out.body["tools"] == body["tools"]


def test_invalid_history_is_remembered_as_it_grows() -> None:
    clear_cache()
    body = _session()
    body["messages"].insert(1, user(result("ghost")))
    first = rewrite_request(body, "anthropic")
    grown = {**body, "messages": [*body["messages"], assistant(text("more"))]}
    again = rewrite_request(grown, "anthropic", anchor=first.anchor)
    assert again.body is None and again.invalid and again.reason == first.reason
    # a history that changed before its end is read again
    edited = {**body, "messages": [user(text("other")), *body["messages"][1:]]}
    assert rewrite_request(edited, "anthropic").reason == first.reason


def test_a_system_message_between_two_assistant_turns_still_hands_off() -> None:
    """Claude Code puts a system message in ``messages`` after a tool result: with the exchange
    gone, the assistant texts on either side of it would follow each other (the API does not
    count a system message between turns), so they are merged, the system message before them,
    and the handoff is made instead of skipped as invalid."""
    from ipse.handoff.wire import rewrite_request

    def block(t: str) -> dict[str, Any]:
        return {"type": "text", "text": t}

    read = {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "/x"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_r", "content": "run 1: 12 MB/s\n" * 200}
    checkpoint = {
        "type": "tool_use",
        "id": "toolu_cp",
        "name": "mcp__ipse__micro_handoff",
        "input": {"done": ["read it"]},
    }
    messages = [
        {"role": "user", "content": [block("Read notes.txt.")]},
        {"role": "assistant", "content": [block("I will read notes.txt."), read]},
        {"role": "user", "content": [result]},
        {"role": "system", "content": "# Environment\nThe date is 2026-12-02."},
        {"role": "assistant", "content": [block("It says 12 MB/s.")]},
        {"role": "user", "content": [block("Save a checkpoint.")]},
        {"role": "assistant", "content": [block("Saving."), checkpoint]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_cp", "content": "saved"}],
        },
    ]
    done = rewrite_request({"model": "claude-x", "messages": messages}, "anthropic")
    assert done.body is not None, done.reason
    assert done.merged == 1
    out = done.body["messages"]
    assert [m["role"] for m in out] == ["user", "system", "assistant", "user", "assistant", "user"]
    assert out[1] == messages[3]  # the system message as Claude Code wrote it
    said = json.dumps(out[2])
    assert "I will read notes.txt." in said and "It says 12 MB/s." in said
    # the call and its result are gone; the marker's ledger names the file and the id
    assert '"toolu_r"' not in json.dumps(out) and "MB/s\\nrun" not in json.dumps(out)
    assert "- /x [toolu_r]" in out[3]["content"][0]["text"]
