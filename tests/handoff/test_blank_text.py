"""Whitespace-only text: the Anthropic API rejects such blocks, so a handoff drops them from the
part it rewrites (and messages left empty), and `validate` names them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ipse.handoff import strip, validate, verify
from ipse.transcript._model import Text
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user

BLANKS = st.text(alphabet=" \t\r\n\u00a0\u2003", min_size=1, max_size=6).filter(
    lambda s: not s.strip()
)


@given(BLANKS, st.integers(min_value=0, max_value=3))
def test_blank_text_blocks_and_messages_left_empty_are_dropped_before_the_cut(
    blank: str, where: int
) -> None:
    messages = [
        user(text("start the server")),
        assistant(text("Starting it."), call("c1")),
        user(result("c1")),
        assistant(text(blank)),
        user(text("[Request interrupted by user]")),
        assistant(text(blank), text("Done, it runs.")),
        user(text("thanks")),
    ]
    if where:
        messages.insert(where * 2, assistant(text(blank)))
        messages.insert(where * 2 + 1, user(text("go on")))
    before = anthropic_conv(*messages)
    after, report = strip(before, "end")
    blocks = [b for m in after.messages[: report.rewritten_out] for b in m.blocks]
    assert all(isinstance(b, Text) and b.text.strip() for b in blocks)
    assert validate(after) == []
    assert verify(before, after, at=report.cut).ok


def test_validate_names_whitespace_only_text_in_anthropic_bodies() -> None:
    body = anthropic_conv(user(text("hi")), assistant(text("\n\n")))
    assert [p.code for p in validate(body)] == ["empty_text"]
