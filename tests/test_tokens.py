"""The offline token counter."""

from __future__ import annotations

import socket

import pytest

from ipse.tokens import CharCounter, O200kCounter, tokenizer_label


def test_counts_o200k_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    counter = O200kCounter()
    # o200k_base splits these into known pieces: "Hello" "," " world" "!"
    assert counter.count("Hello, world!") == 4
    assert counter.count("") == 0
    assert counter.count("a" * 5) >= 1
    assert counter.count_many(["Hello, world!", ""]) == [4, 0]


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    assert O200kCounter().count("<|endoftext|>") > 1


def test_labels_name_the_tokenizer_and_mark_claude_approximate() -> None:
    counter = O200kCounter()
    assert tokenizer_label(counter, "gpt-4o") == "o200k_base"
    assert "approximate" in tokenizer_label(counter, "claude-opus-4-6")
    assert tokenizer_label(CharCounter()) == "chars/4"
