"""What a mechanism asks a codec instead of testing a dialect's name: the name it goes by, how a
request's instructions are laid out, how a streamed answer ends or reports an error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse.errors import UsageError
from ipse.transcript import Text
from ipse.transcript._codec import DIALECTS, codec

_TEXTS = st.lists(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1).filter(str.strip),
    min_size=1,
    max_size=3,
)


def test_openai_stands_for_chat_completions_and_an_unknown_name_is_refused() -> None:
    assert codec("openai") is codec("openai-chat")
    assert [codec(name).dialect for name in DIALECTS] == list(DIALECTS)
    with pytest.raises(UsageError, match="no codec for 'gemini'; known: anthropic, openai-chat"):
        codec("gemini")


@pytest.mark.parametrize("dialect", DIALECTS)
@given(texts=_TEXTS)
def test_a_front_reads_back_as_the_conversations_instructions(
    dialect: str, texts: list[str]
) -> None:
    found = codec(dialect)
    body: dict[str, Any] = {"model": "m", **found.front(texts)}  # (history after the front's)
    body[found.history_key] = [*body.get(found.history_key, ()), {"role": "user", "content": "hi"}]
    conversation = found.read_body(body)
    system = [block.text for block in conversation.system if isinstance(block, Text)]
    assert "\n\n".join(system) == "\n\n".join(texts)
    assert [m.role for m in conversation.messages] == ["user"]
    assert found.raw_front(body) is not None
    marked = found.breakpoint_key is not None and found.breakpoint_key in json.dumps(body)
    assert marked == (found.breakpoint_key is not None)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_error_is_one_server_sent_event(dialect: str) -> None:
    event = codec(dialect).stream_error('a "quoted" message')
    assert event.endswith(b"\n\n") and event.count(b"\n\n") == 1
    data = json.loads(event.split(b"data: ", 1)[1])
    assert 'a "quoted" message' in json.dumps(data, ensure_ascii=False).replace('\\"', '"')
    assert codec(dialect).stream_end
