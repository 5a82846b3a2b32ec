"""The command line's quick o200k counts equal the default counter's, text for text: on
generated texts (letters of several scripts, digits, whitespace of every kind, contractions,
punctuation runs, long runs cut as the default cuts them) and on every text of every shared
session; texts it should not count itself go to the encoder and count the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._tokens import O200kCounter, default_counter, load_ranks
from ipse.cli import _quick_count
from ipse.cli._quick_count import QuickCounter, merged
from ipse.transcript import load
from ipse.transcript._shared import counted_text

DEFAULT = default_counter()
_ALPHABET = st.sampled_from(
    [
        *"aZé ß\n\r\t 0123456789'sS.,;:!?-_/\\()[]{}<>\"`~#$%^&*=+|",
        *("'ll", "'RE", "\u00a0", "\u2028", "—", "→", "│", "✓", "Ω", "ж", "ا", "क", "\u0301"),
    ]
)


@pytest.fixture
def unbuilt(monkeypatch: pytest.MonkeyPatch) -> O200kCounter:
    """An encoder not built yet, as the command line starts with."""
    fresh = O200kCounter()
    monkeypatch.setattr(_quick_count, "default_counter", lambda: fresh)
    return fresh


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_ALPHABET, max_size=300))
def test_a_generated_text_counts_as_the_encoder_counts_it(parts: list[str]) -> None:
    text = "".join(parts)
    quick = QuickCounter()
    assert quick.count(text) == DEFAULT.count(text)


def test_long_pieces_and_wide_characters_go_to_the_encoder(unbuilt: O200kCounter) -> None:
    quick = QuickCounter()
    texts = ["word " * 3000, "=" * 300, "a-b " * 50]  # (the first cut in parts as the default)
    assert [quick.count(t) for t in texts] == [DEFAULT.count(t) for t in texts]
    assert not unbuilt.loaded  # counted from the ranks
    for text in ("x" * 9000 + " tail", "=" * 700, "漢字とかな 🚀 mixed"):
        quick = QuickCounter()
        unbuilt._encoding = None
        assert quick.count(text) == DEFAULT.count(text) and unbuilt.loaded
        assert quick.count("word " * 10) == DEFAULT.count("word " * 10)  # the encoder now


def test_merging_one_piece_gives_tiktoken_s_tokens() -> None:
    ranks = load_ranks()
    for piece in ("tokenization", "ipse_handoff_ledger", "────────", "xqzjv"):
        assert merged(piece.encode(), ranks) == DEFAULT.count(piece)


@pytest.mark.shared
def test_every_text_of_every_shared_session_counts_the_same(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_quick_count, "_ENOUGH", 10**9)
    for path in sorted(shared_data.rglob("*.json*")):
        if "anthropic-http" in path.parts or "subagents" in path.parts:
            continue
        conversation = load(path).current()
        quick = QuickCounter()
        for message in conversation.messages:
            for block in message.blocks:
                text = counted_text(block)
                assert quick.count(text) == DEFAULT.count(text), (path.name, text[:80])
