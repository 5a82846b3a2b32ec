"""``ipse.write(..., max_tokens=)``: a Claude Code session (no ``max_tokens``) written as an
Anthropic body the API accepts, without reaching for the handoff."""

from __future__ import annotations

from pathlib import Path

import pytest

import ipse
from ipse.errors import UsageError
from tests.conftest import EXAMPLE_SESSION


def test_a_session_written_with_max_tokens_gets_it() -> None:
    conversation = ipse.read_conversation(EXAMPLE_SESSION)
    assert "max_tokens" not in ipse.write(conversation)
    body = ipse.write(conversation, max_tokens=4096)
    assert body["max_tokens"] == 4096
    assert body["messages"] == ipse.write(conversation)["messages"]


def test_a_body_that_has_max_tokens_keeps_its_own(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(
        '{"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}'
    )
    assert ipse.write(ipse.read_conversation(path), max_tokens=4096)["max_tokens"] == 100


def test_max_tokens_for_a_dialect_that_does_not_take_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        '{"model": "gpt-x", "messages": [{"role": "system", "content": "be brief"},'
        ' {"role": "user", "content": "hi"}]}'
    )
    conversation = ipse.read_conversation(path)
    assert conversation.dialect == "openai-chat"
    with pytest.raises(UsageError, match="max_tokens"):
        ipse.write(conversation, max_tokens=10)


def test_a_max_tokens_below_one_is_refused() -> None:
    with pytest.raises(UsageError, match="at least 1"):
        ipse.write(ipse.read_conversation(EXAMPLE_SESSION), max_tokens=0)
