"""Token counting, offline.

`TokenCounter` is the protocol every counter follows: a name (which tokenizer) and ``count``.
The default counts with OpenAI's o200k_base vocabulary through tiktoken, loading the vocabulary
from a copy shipped inside this package (tiktoken would download it on first use, which fails
without a network). Nothing is loaded until the first count: a command that counts nothing does
not import tiktoken.

The copy is the published ``o200k_base.tiktoken`` (sha256 `O200K_SHA256`) precompiled into the
form tiktoken takes, a pickled ``{token bytes: rank}`` dict (`build_ranks_file`): it loads in a
few tens of milliseconds, where decoding the published base64 text took most of a second. The
file's own sha256 (`O200K_RANKS_SHA256`) is checked before it is unpickled, and `tiktoken_text`
rebuilds the published text from it, byte for byte (the tests check it against `O200K_SHA256`).

Claude's tokenizer is not public: counts for Claude models come from o200k_base and are labelled
approximate (`tokenizer_label`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from ipse.errors import IpseError

# The published o200k_base.tiktoken, and the precompiled ranks shipped in ipse/data.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_RANKS_FILE = "data/o200k_base.ranks.pickle"
O200K_RANKS_SHA256 = "9092ac3ddfae5086a3ef2bfd0e990d0a24fc3a6b4bd706590da0883168aad907"

# The pre-tokenization pattern of o200k_base, as published with the vocabulary.
O200K_PATTERN = "|".join(
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
        if len(text) <= _RUN:
            return len(encoding.encode_ordinary(text))
        return sum(len(encoding.encode_ordinary(part)) for part in split_for_count(text))

    @property
    def loaded(self) -> bool:
        """Whether the encoder is built (counting costs no more than encoding)."""
        return self._encoding is not None

    def load(self) -> None:
        """Build the encoder now rather than at the first count."""
        if self._encoding is None:
            self._load()

    def count_many(self, texts: list[str]) -> list[int]:
        """Count several texts at once (tiktoken batches them over threads)."""
        encoding = self._encoding or self._load()
        return [len(t) for t in encoding.encode_ordinary_batch(texts)]


# Texts are counted in parts of at most _CHUNK characters, and runs of one character class
# (letters, whitespace, punctuation) longer than _RUN in parts of _RUN: tiktoken's byte-pair
# merge is quadratic in the length of one pre-tokenized piece (a megabyte of letters takes
# seconds, tens of megabytes hours; a megabyte of spaces overflows its regex stack), and its
# token list of a 64 MB text would take gigabytes.
_CHUNK = 1 << 20
_RUN = 4096
# Cuts that the pre-tokenizer makes anyway (no piece spans them): after a newline that is
# followed by an ASCII letter or digit, and between a lowercase letter and a space followed
# by one. Counting the parts separately gives the same total.
_SAFE_CUT = re.compile(r"\n(?=[A-Za-z0-9])|[a-z](?= [a-z])")
# A run of one class (letters, whitespace, punctuation) from a given position.
_RUN_REST = {
    "letters": re.compile(r"[^\W\d_]*"),
    "space": re.compile(r"\s*"),
    "punct": re.compile(r"[^\w\s]*"),
}


def _class(text: str) -> str | None:
    """The class all of ``text`` belongs to, if one (stops at the first other character)."""
    for name, pattern in _RUN_REST.items():
        if pattern.fullmatch(text):
            return name
    return None


def _long_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every run of one class at least ``_RUN`` long. Only windows of half
    that length on a grid are tested (a long run holds one whole), each failing at its first
    character of another class, so the scan costs little more than a pass over the text."""
    half = _RUN // 2
    at = 0
    while at + half <= len(text):
        name = _class(text[at : at + half])
        if name is None:
            at += half
            continue
        pattern = _RUN_REST[name]
        start = at
        while start > 0 and pattern.fullmatch(text[start - 1]):
            start -= 1
        match = pattern.match(text, at + half)
        end = match.end() if match else at + half
        if end - start >= _RUN:
            yield start, end
        at = end


def split_for_count(text: str) -> Iterator[str]:
    """``text`` in parts whose counts add up to the count of the whole: at most ``_CHUNK``
    characters, cut where the pre-tokenizer cuts (else anywhere, costing at most a token per
    cut), with each long run of one character class in parts of ``_RUN`` characters (counted
    as those parts: an estimate, where the whole would take quadratic time)."""
    start = 0
    for run_start, run_end in _long_runs(text):
        yield from _chunks(text, start, run_start)
        for at in range(run_start, run_end, _RUN):
            yield text[at : min(at + _RUN, run_end)]
        start = run_end
    yield from _chunks(text, start, len(text))


def safe_cut(match: re.Match[str]) -> int:
    """Where a `_SAFE_CUT` match cuts: after the newline, or after the letter."""
    return match.start() + 1


def _chunks(text: str, start: int, end: int) -> Iterator[str]:
    while end - start > _CHUNK:
        limit = start + _CHUNK
        cut = limit
        window = max(start + 1, limit - _CHUNK // 16)
        for match in _SAFE_CUT.finditer(text, window, limit):
            cut = safe_cut(match)
        yield text[start:cut]
        start = cut
    if end > start:
        yield text[start:end]


def _load_o200k() -> Any:
    import tiktoken

    encoding = tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PATTERN,
        mergeable_ranks=load_ranks(),
        special_tokens=_O200K_SPECIAL,
    )
    # The encoder keeps its own copy of the ranks (in Rust); the Python dict it was built from
    # (about 30 MB) is only read again to pickle the encoding, which ipse never does.
    if isinstance(getattr(encoding, "_mergeable_ranks", None), dict):
        encoding._mergeable_ranks = {}
    return encoding


def load_ranks() -> dict[bytes, int]:
    """The shipped o200k_base mergeable ranks, checked against their sha256 before use."""
    import hashlib
    import pickle
    from pathlib import Path

    # (beside this module, as the package ships it: importlib.resources, which also reads
    # zipped packages, costs a few milliseconds of imports that this file never needs)
    packed = Path(__file__).parent.joinpath(O200K_RANKS_FILE).read_bytes()
    if hashlib.sha256(packed).hexdigest() != O200K_RANKS_SHA256:
        raise IpseError("the shipped o200k_base vocabulary is damaged (sha256 mismatch)")
    ranks = pickle.loads(packed)
    if not isinstance(ranks, dict):
        raise IpseError("the shipped o200k_base vocabulary is damaged (not a rank table)")
    return ranks


def build_ranks_file(published: bytes) -> bytes:
    """The shipped form of the published ``o200k_base.tiktoken`` text (checked by sha256)."""
    import base64
    import hashlib
    import pickle

    if hashlib.sha256(published).hexdigest() != O200K_SHA256:
        raise IpseError("this is not the published o200k_base vocabulary (sha256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in published.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return pickle.dumps(ranks, protocol=4)


def tiktoken_text(ranks: dict[bytes, int]) -> bytes:
    """The ``.tiktoken`` text of a rank table: one ``base64 rank`` line per token, by rank."""
    import base64

    lines = (base64.b64encode(t) + b" " + str(r).encode() for t, r in ranks.items())
    return b"".join(line + b"\n" for line in lines)


class CharCounter:
    """A rough counter (characters / 4) for when speed matters more than accuracy."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


class MemoCounter:
    """Another counter, remembering what each text counted: for one command that counts the
    same blocks twice (``inspect --messages``: the tokens by kind, then per message). Not for
    a long-lived process: the memory holds every text counted."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._memo: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.counter.name

    def count(self, text: str) -> int:
        cached = self._memo.get(text)
        if cached is None:
            cached = self._memo[text] = self.counter.count(text)
        return cached


@lru_cache(maxsize=1)
def default_counter() -> O200kCounter:
    """The process-wide default counter (o200k_base, offline)."""
    return O200kCounter()


# Inputs at least this large are read after the default encoder is built (`load_before`).
_LOAD_BEFORE_BYTES = 8 << 20


def load_before(path: str | os.PathLike[str]) -> None:
    """Build the default encoder before reading ``path`` when it is a large file (a command
    that will count its tokens calls this first). The encoder is built from a table of about
    30 MB that is let go once built: built first, that memory is reused by the input's
    objects; built after, it adds to the peak on top of them."""
    try:
        large = os.stat(path).st_size >= _LOAD_BEFORE_BYTES
    except (OSError, ValueError):
        return  # reading the input reports what is wrong with it
    if large:
        default_counter().load()


def tokenizer_label(counter: TokenCounter, model: str | None = None) -> str:
    """How a count should be labelled: the tokenizer, and ``approximate`` for Claude models."""
    if model and _is_claude(model):
        return f"{counter.name} (approximate for {model}: Claude's tokenizer is not public)"
    return counter.name


def _is_claude(model: str) -> bool:
    lowered = model.lower()
    return "claude" in lowered or lowered.startswith(("anthropic", "opus", "sonnet", "haiku"))


__all__ = [
    "O200K_PATTERN",
    "O200K_SHA256",
    "CharCounter",
    "MemoCounter",
    "O200kCounter",
    "TokenCounter",
    "build_ranks_file",
    "default_counter",
    "load_before",
    "load_ranks",
    "tiktoken_text",
    "tokenizer_label",
]
