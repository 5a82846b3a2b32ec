"""Prompt-cache breakpoints through a handoff: a ``cache_control`` on a removed block moves to the
nearest kept block at or before it, so the rewritten request keeps the client's breakpoints.

Properties over generated Anthropic bodies with markers on any blocks (removed ones included):
the count is kept, every marker sits at or before its old position, the output validates, every
authored word is kept byte for byte, and rewriting again changes nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ipse import jsonio
from ipse.handoff import validate
from ipse.handoff._marker import TAG
from ipse.handoff._strip import CONTINUED
from ipse.handoff.wire import rewrite_request
from ipse.transcript._codec import codec
from tests.handoff.build import assistant, call, result, text, thinking, user
from tests.handoff.test_properties import anthropic_bodies

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MARK = {"type": "ephemeral"}
LONG = {"type": "ephemeral", "ttl": "1h"}


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"type": "text", "text": content})
        else:
            out.extend(content)
    return out


def _marks(messages: list[dict[str, Any]]) -> list[Any]:
    return [b["cache_control"] for b in _blocks(messages) if "cache_control" in b]


def _without(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _origins(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[int]:
    """For each output block, the position of the input block it starts with (matched in order:
    a joined text starts with its first text; any other block is matched as it is). The line
    the handoff opens with when no user turn is left to open the request (`CONTINUED`) stands
    before every input block: -1. The handoff's marker at the cut (`TAG`) comes from no input
    block and can carry no breakpoint: it stands after every one."""
    source = _blocks(before)
    origins: list[int] = []
    j = 0
    for number, block in enumerate(_blocks(after)):
        if number <= 1 and _without(block) == {"type": "text", "text": CONTINUED}:
            origins.append(-1)
            continue
        if block.get("type") == "text" and block["text"].startswith(TAG):
            origins.append(len(source))
            continue
        k = j
        while k < len(source):
            candidate = source[k]
            if block.get("type") == "text" and candidate.get("type") == "text":
                if candidate["text"] and block["text"].startswith(candidate["text"]):
                    break
            elif _without(candidate) == _without(block):
                break
            k += 1
        assert k < len(source), f"output block not found in the input: {block}"
        origins.append(k)
        j = k + 1
    return origins


def _marked_positions(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, b in enumerate(_blocks(messages)) if "cache_control" in b]


@st.composite
def marked_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body = jsonio.loads(jsonio.dumps(draw(anthropic_bodies())))  # no block shared by two places
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    chosen = draw(st.lists(st.integers(0, len(blocks) - 1), max_size=4, unique=True))
    for index in sorted(chosen):
        blocks[index]["cache_control"] = dict(MARK)
    return body


# Found by the property: the only user text is blank (the API refuses it), so the handoff
# opens with its `CONTINUED` line, and the marker that was on the blank text moves there.
_BLANK_OPENING = {
    "model": "m",
    "messages": [
        user({"type": "text", "text": "\r", "cache_control": dict(MARK)}),
        assistant(call("toolu_0", "Bash", arg="0")),
        user(result("toolu_0", "ok")),
        assistant(call("toolu_1", "micro_handoff", arg="0")),
        user(result("toolu_1", "ok")),
        assistant(text("0")),
    ],
}


@SETTINGS
@given(marked_bodies())
@example(_BLANK_OPENING)
def test_breakpoints_survive_the_handoff(body: dict[str, Any]) -> None:
    out = rewrite_request(body, "anthropic", use_cache=False)
    assume(out.applied)
    assert out.body is not None
    before, after = body["messages"], out.body["messages"]
    # the count is kept wherever there are enough kept blocks at or before the markers
    origins = _origins(before, after)
    wanted = _marked_positions(before)
    room = all(sum(o <= p for o in origins) >= j for j, p in enumerate(wanted, 1))
    assert len(_marks(after)) <= len(wanted) <= 4
    assert len(_marks(after)) == len(wanted) or not room
    # every marker sits at or before the block that carried it, in the same order
    moved = [origins[i] for i in _marked_positions(after)]
    assert all(a <= b for a, b in zip(moved, wanted[len(wanted) - len(moved) :], strict=True))
    # valid (no problem the input did not have), every authored word kept byte for byte
    known = {p.code for p in validate(codec("anthropic").read_body(body))}
    problems = validate(codec("anthropic").read_body(out.body))
    assert not [p for p in problems if p.code not in known]
    words = [b["text"] for b in _blocks(before) if b.get("type") == "text" and b["text"].strip()]
    dumped = jsonio.dumps(after).decode()
    assert all(jsonio.dumps(w).decode()[1:-1] in dumped for w in words)
    # idempotent, and the same bytes every time
    again = rewrite_request(out.body, "anthropic", use_cache=False)
    assert again.body is not None
    assert jsonio.dumps(again.body) == jsonio.dumps(out.body)
    cached = rewrite_request(body, "anthropic", anchor=out.anchor)
    assert cached.body is not None
    assert jsonio.dumps(cached.body) == jsonio.dumps(out.body)


def _history(*marked: str) -> dict[str, Any]:
    """Three tool exchanges before a checkpoint; ``marked`` names blocks to carry a marker."""
    blocks = {
        "ask": text("find the bug"),
        "look": text("looking"),
        "think": thinking("where is it"),
        "read": call("toolu_1", "Read", path="a.py"),
        "read_result": result("toolu_1", "x = 1"),
        "grep": call("toolu_2", "Grep", pattern="x"),
        "grep_result": result("toolu_2", [text("a.py:1")]),
        "cp": call("toolu_cp", "micro_handoff", notes="off by one"),
        "cp_result": result("toolu_cp", "saved"),
        "next": text("now fix it"),
    }
    for name in marked:
        blocks[name]["cache_control"] = LONG if name == "ask" else MARK
    messages = [
        user(blocks["ask"]),
        assistant(blocks["look"], blocks["think"], blocks["read"]),
        user(blocks["read_result"]),
        assistant(blocks["grep"]),
        user(blocks["grep_result"]),
        assistant(text("found it"), blocks["cp"]),
        user(blocks["cp_result"]),
        assistant(text("fixing")),
        user(blocks["next"]),
    ]
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages}


def test_a_marker_on_a_removed_result_moves_to_the_kept_text_before_it() -> None:
    out = rewrite_request(_history("grep_result", "next"), "anthropic", use_cache=False)
    assert out.body is not None
    first, second = out.body["messages"][:2]
    assert "cache_control" not in first["content"][0]
    joined = second["content"][0]
    assert joined["text"] == "looking\n\nfound it"
    assert joined["cache_control"] == MARK
    assert out.body["messages"][-1]["content"][-1]["cache_control"] == MARK


def test_two_markers_never_share_a_block_and_keep_their_order() -> None:
    out = rewrite_request(_history("ask", "read_result", "grep"), "anthropic", use_cache=False)
    assert out.body is not None
    # "read_result" and "grep" both belong on the joined text; the older one moves back, onto
    # "ask", whose own marker has no kept block left before it: the newest markers win
    assert _marks(out.body["messages"]) == [MARK, MARK]
    out = rewrite_request(_history("ask", "grep"), "anthropic", use_cache=False)
    assert out.body is not None
    assert _marks(out.body["messages"]) == [LONG, MARK]  # the order (and so the TTLs') is kept
    assert out.body["messages"][0]["content"][1]["cache_control"] == LONG  # (after the marker)


def test_no_marker_is_added_where_the_client_put_none() -> None:
    body = _history()
    out = rewrite_request(body, "anthropic", use_cache=False)
    assert out.body is not None
    assert _marks(out.body["messages"]) == []
    first = out.body["messages"][0]["content"]
    assert first[0]["text"].startswith(TAG)  # the handoff's marker, which has none
    assert first[1] is body["messages"][0]["content"][0]  # untouched: the same dict


def test_a_marker_on_kept_thinking_dropped_for_a_binding_model_moves_back() -> None:
    body = _history("next")
    body["model"] = "claude-opus-5-5"  # binds thinking: the kept turns lose theirs too
    marked = {**thinking("then fix"), "cache_control": MARK}
    body["messages"][7] = assistant(marked, text("fixing"))
    original = jsonio.dumps(body)
    for use_cache in (False, True, True):
        out = rewrite_request(body, "anthropic", use_cache=use_cache)
        assert out.body is not None and out.kept_thinking_removed == 1
        sent = out.body["messages"]
        # the checkpoint's result, the block right before the removed thinking, carries it now
        assert sent[-3]["content"][-1]["tool_use_id"] == "toolu_cp"
        assert sent[-3]["content"][-1]["cache_control"] == MARK
        assert sent[-2]["content"] == [text("fixing")]
        assert len(_marks(sent)) == 2
    assert jsonio.dumps(body) == original  # the input is not changed
