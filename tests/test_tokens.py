"""The offline token counter."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse import _tokens as tokens
from ipse._tokens import (
    O200K_SHA256,
    CharCounter,
    MemoCounter,
    O200kCounter,
    build_ranks_file,
    load_ranks,
    tiktoken_text,
    tokenizer_label,
)
from ipse.errors import IpseError


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


def test_shipped_ranks_are_the_published_vocabulary_byte_for_byte() -> None:
    ranks = load_ranks()
    assert len(ranks) == 199998 and sorted(ranks.values()) == list(range(199998))
    published = tiktoken_text(ranks)
    assert hashlib.sha256(published).hexdigest() == O200K_SHA256
    assert hashlib.sha256(build_ranks_file(published)).hexdigest() == tokens.O200K_RANKS_SHA256


def test_a_damaged_vocabulary_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(IpseError, match="not the published"):
        build_ranks_file(b"IQ== 0\n")
    monkeypatch.setattr(tokens, "O200K_RANKS_SHA256", "0" * 64)
    with pytest.raises(IpseError, match="damaged"):
        O200kCounter().count("Hello")


def test_importing_the_counter_loads_nothing() -> None:
    code = (
        "import sys; from ipse._tokens import default_counter; c = default_counter(); "
        "assert 'tiktoken' not in sys.modules; c.count('x'); assert 'tiktoken' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


_WORDS = st.sampled_from(
    ["alpha", "Beta", " gamma", " ", "\n", "\n\n", "42", "{", "}", "\t", "é", "'s", ".", "x1", "/"]
)
_COUNTER = tokens.O200kCounter()


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_WORDS, min_size=1, max_size=120))
def test_the_cuts_used_for_long_texts_keep_the_count(parts: list[str]) -> None:
    """A long text is counted in parts cut where the pre-tokenizer cuts anyway: at every
    such cut, the parts' counts add up to the whole's."""
    text = "".join(parts)
    encoding = _COUNTER._load()
    whole = len(encoding.encode_ordinary(text))
    for match in tokens._SAFE_CUT.finditer(text):
        cut = tokens.safe_cut(match)
        head, tail = text[:cut], text[cut:]
        assert len(encoding.encode_ordinary(head)) + len(encoding.encode_ordinary(tail)) == whole
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "_CHUNK", 16)
        assert "".join(tokens.split_for_count(text)) == text


def test_long_runs_count_in_linear_time_and_never_crash() -> None:
    for text in ("x" * 3_000_000, " " * 3_000_000, "{" * 3_000_000):
        assert "".join(tokens.split_for_count(text)) == text
        assert _COUNTER.count(text) > 0


def test_the_encoder_is_built_before_a_large_input_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = O200kCounter()
    monkeypatch.setattr(tokens, "default_counter", lambda: fresh)
    monkeypatch.setattr(tokens, "_LOAD_BEFORE_BYTES", 1000)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_bytes(b"{}\n" * 10)
    large.write_bytes(b"{}\n" * 400)
    tokens.load_before(small)
    tokens.load_before(tmp_path / "missing.jsonl")  # reading it will say what is wrong
    assert fresh._encoding is None
    tokens.load_before(large)
    assert fresh._encoding is not None
    assert fresh.count("hello world") == 2


def test_the_built_encoder_lets_its_rank_table_go() -> None:
    counter = O200kCounter()
    counter.load()
    assert counter._encoding._mergeable_ranks == {}
    assert counter.count("the rank table is gone, the encoder still counts") > 5


class _Counting:
    name = "counting"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text)


def test_a_memo_counter_counts_each_text_once() -> None:
    """`inspect --messages` counts every block for the tokens by kind and again for its
    rows: through a `MemoCounter` the tokenizer sees each text once."""
    inner = _Counting()
    counter = MemoCounter(inner)
    assert [counter.count(t) for t in ("ab", "abc", "ab", "abc", "")] == [2, 3, 2, 3, 0]
    assert inner.calls == ["ab", "abc", ""]
    assert counter.name == "counting"
