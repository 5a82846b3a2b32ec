"""o200k_base counts for one ``ipse handoff`` of a small session, without building tiktoken's
encoder: the same numbers, sooner.

Building tiktoken's encoder (its Rust tables from the 200,000 ranks) costs about 110 ms of
processor time, on top of the 45 ms of reading the ranks; a handoff of a few megabytes counts
a few hundred kilobytes of text (the measurement, the marker's tokens, the ledger's cap), which
the rank table alone counts in about 60 ms: each piece the published pre-tokenization pattern
cuts is looked up whole (most are one token), and the few that are not are merged pair by pair
as tiktoken merges them (the lowest rank first, the leftmost of equals). `QuickCounter` counts
so while that is the cheaper way, and hands every count to the default encoder
(`ipse.tokens.default_counter`) from the first text it should not count itself on:

- a text holding a character from U+3000 up (where the `regex` module's Unicode tables and
  tiktoken's could differ on a recently assigned character);
- a piece longer than ``_PIECE`` bytes, or one that would take the pair lookups of the pieces
  merged so far past ``_WORK`` (merging pair by pair is quadratic in a piece's length);
- once it has counted ``_ENOUGH`` characters, where building the encoder pays for itself.

Texts longer than tiktoken counts in one go are cut as `ipse.tokens.O200kCounter` cuts them
(`split_for_count`), so every count equals that counter's (`tests/test_quick_count.py`
holds it to it on generated texts and on every shared session). A trick at the edge: the
command line passes it to the handoff as its counter; the library counts with the default.
"""

from __future__ import annotations

from typing import Any

from ipse._tokens import O200K_PATTERN, O200kCounter, default_counter, load_ranks
from ipse._tokens import split_for_count as _split

_PIECE = 512  # bytes of the longest piece merged here
_WORK = 400_000  # pair lookups (a piece's length squared, summed) merged here at most
_ENOUGH = 600_000  # characters counted here before the encoder is built instead
_WIDE = "\u3000"  # the first character left to tiktoken


class QuickCounter:
    """o200k_base, counted from the rank table until the encoder is the cheaper way."""

    name = "o200k_base"

    def __init__(self) -> None:
        self._ranks: dict[bytes, int] | None = None
        self._pattern: Any = None
        self._pieces: dict[bytes, int] = {}
        self._counted = 0
        self._work = 0
        self._full: O200kCounter | None = None

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._full is None and default_counter().loaded:
            self._full = default_counter()  # (built already: a large input's `load_before`)
        if self._full is None:
            parts = list(_split(text))  # (the text itself, unless the default cuts it)
            counts = [self._quick(part) for part in parts]
            if all(n is not None for n in counts):
                self._counted += len(text)
                return sum(n for n in counts if n is not None)
            self._full = default_counter()
        return self._full.count(text)

    def _quick(self, text: str) -> int | None:
        """``text``'s tokens from the rank table; None where the encoder should count."""
        if self._counted + len(text) > _ENOUGH or max(text) >= _WIDE:
            return None
        if self._ranks is None:
            import regex  # type: ignore[import-untyped]

            self._ranks = load_ranks()
            self._pattern = regex.compile(O200K_PATTERN)
        ranks, pieces = self._ranks, self._pieces
        total = 0
        for piece in self._pattern.findall(text):
            data = piece.encode("utf-8")
            if data in ranks:
                total += 1
                continue
            known = pieces.get(data)
            if known is None:
                self._work += len(data) * len(data)
                if len(data) > _PIECE or self._work > _WORK:
                    return None
                known = pieces[data] = merged(data, ranks)
            total += known
        return total


def merged(data: bytes, ranks: dict[bytes, int]) -> int:
    """The tokens of one piece by byte-pair merging: the adjacent pair of lowest rank joined
    first (the leftmost of equals), until no pair is a token (tiktoken's ``_byte_pair_merge``)."""
    parts = [data[i : i + 1] for i in range(len(data))]
    while len(parts) > 1:
        best, at = -1, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best < 0 or rank < best):
                best, at = rank, i
        if at < 0:
            break
        parts[at : at + 2] = [parts[at] + parts[at + 1]]
    return len(parts)


__all__ = ["QuickCounter", "merged"]
