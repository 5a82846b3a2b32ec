"""Token counting, offline.

`TokenCounter` is the protocol every counter follows: a name (which tokenizer) and ``count``.
The default counts with OpenAI's o200k_base vocabulary through tiktoken, loading the vocabulary
from a copy shipped inside this package (tiktoken would download it on first use, which fails
without a network). The copy is checked against the published sha256 before use.

Claude's tokenizer is not public: counts for Claude models come from o200k_base and are labelled
approximate (`tokenizer_label`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from ipse.errors import IpseError

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The pre-tokenization pattern of o200k_base, as published with the vocabulary.
_O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text with one named tokenizer."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class O200kCounter:
    """o200k_base through tiktoken, with the vocabulary shipped in the package."""

    name = "o200k_base"

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._encoding is None:
                self._encoding = _load_o200k()
            return self._encoding

    def count(self, text: str) -> int:
        if not text:
            return 0
        encoding = self._encoding or self._load()
        return len(encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        """Count several texts at once (tiktoken batches them over threads)."""
        encoding = self._encoding or self._load()
        return [len(t) for t in encoding.encode_ordinary_batch(texts)]


def _load_o200k() -> Any:
    import tiktoken

    packed = resources.files("ipse").joinpath("data/o200k_base.tiktoken.gz").read_bytes()
    raw = gzip.decompress(packed)
    if hashlib.sha256(raw).hexdigest() != O200K_SHA256:
        raise IpseError("the shipped o200k_base vocabulary is damaged (sha256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=_O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_O200K_SPECIAL,
    )


class CharCounter:
    """A rough counter (characters / 4) for when speed matters more than accuracy."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


@lru_cache(maxsize=1)
def default_counter() -> O200kCounter:
    """The process-wide default counter (o200k_base, offline)."""
    return O200kCounter()


def tokenizer_label(counter: TokenCounter, model: str | None = None) -> str:
    """How a count should be labelled: the tokenizer, and ``approximate`` for Claude models."""
    if model and _is_claude(model):
        return f"{counter.name} (approximate for {model}: Claude's tokenizer is not public)"
    return counter.name


def _is_claude(model: str) -> bool:
    lowered = model.lower()
    return "claude" in lowered or lowered.startswith(("anthropic", "opus", "sonnet", "haiku"))


__all__ = [
    "CharCounter",
    "O200kCounter",
    "TokenCounter",
    "default_counter",
    "tokenizer_label",
]
