"""The positions a part of a request contributes (its tool list, its system prompt, a
message), each part hashed and counted once per log.

A `BlockHasher` turns a part into a `Segment`: per block, its hash, its tokens, its breakpoint,
its kind and (for stable hashes) the bytes hashed. Parts are memoised by object identity, else
by the hash of their bytes, so a part an earlier request sent is never split, hashed or counted
again; tokens are kept per distinct block hash. ``counter`` counts a block's text
(`ipse.prefix._blocks.block_text`); without one, a block is estimated at a quarter of its
serialized bytes (callers scale estimates to recorded usage when they have it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec
import orjson

from ipse._tokens import TokenCounter
from ipse.jsonio import is_object
from ipse.prefix._blocks import (
    IMAGE_KINDS,
    IMAGE_TYPES,
    as_rendered,
    block_text,
    content_blocks,
    dumps,
    fast_hash,
    rendered_text,
    salt,
    stable_hash,
    without_breakpoint,
)
from ipse.transcript._shared import Positions


def salted(first: bytes, h: int) -> int:
    """The fast hash of a part's first block (hashed ``h``) after the salt naming the part: a
    hash of the two, so that a block's own hash, taken once, serves wherever it stands."""
    return hash((first, h))


def digest(item: Any) -> tuple[int, int, str | None, str]:
    """What a block's positions need before its place is known (a session's blocks are
    digested as they are read, then dropped: `ipse.transcript._formats.claude_code_stored`):
    the fast hash of its bytes, their length, its breakpoint's TTL and its kind. A block
    placed first in its part is then `salted`, its salt's length added to its size."""
    if type(item) is dict and item.get("cache_control") is None:  # (most blocks: no calls)
        body: Any = rendered_text(item) if len(item) == 2 else item
        ttl = None
    elif is_object(item):
        body, ttl = without_breakpoint(item)
        body = rendered_text(body)
    else:
        data = dumps(item)
        return hash(data), len(data), None, "text"
    kind = body.get("type", "")
    if type(kind) is not str:
        kind = str(kind)
    try:
        data = orjson.dumps(body)
    except TypeError:  # (what orjson does not write: `dumps` knows)
        data = dumps(body)
    return hash(data), len(data), ttl, kind


class Segment(msgspec.Struct):
    """The positions one memoised part (tool list, system prompt, message) contributes."""

    hashes: list[int]
    tokens: list[int]
    ttls: list[str | None]
    kinds: list[str]
    texts: list[bytes]
    has_image: bool = False


def _empty() -> Segment:
    return Segment([], [], [], [], [])


class BlockHasher:
    """Hashes the blocks of one log and counts their tokens, each distinct block once; makes
    the `Segment` of a tool list, a system prompt or a message, each part once."""

    def __init__(self, counter: TokenCounter | None = None, *, stable: bool = False) -> None:
        self.counter = counter
        self.stable = stable
        self.hash: Callable[[bytes], int] = stable_hash if stable else fast_hash
        self.token_counts: dict[int, int] = {}  # block hash -> its tokens
        self._by_bytes: dict[int, Segment] = {}
        self._by_id: dict[int, tuple[Any, Segment]] = {}
        self._salts: dict[str, bytes] = {}  # role -> `salt` (`role_salt`)

    def count(self, h: int, raw: Any, size: int) -> int:
        """The tokens of the block hashed ``h`` (``raw``, serialized in ``size`` bytes)."""
        cached = self.token_counts.get(h)
        if cached is None:
            if self.counter is None:
                cached = max(1, size // 4)
            else:
                cached = self.counter.count(block_text(raw))
            self.token_counts[h] = cached
        return cached

    def role_salt(self, message: Mapping[str, Any]) -> bytes:
        """`salt`, kept per role: a session's messages have a few roles between them."""
        role = message.get("role")
        if type(role) is not str:
            return salt(message)
        known = self._salts.get(role)
        if known is None:
            known = self._salts[role] = salt(message)
        return known

    def block(self, item: Any, first: bytes) -> tuple[int, int, str | None, str, bytes]:
        """One block's position: its hash, tokens, breakpoint TTL, kind and hashed bytes
        (``first`` before them: the first block of a part says which part it opens)."""
        if is_object(item):
            body, ttl = without_breakpoint(item)
            body = rendered_text(body)
            kind = str(body.get("type", ""))
        else:
            body, ttl, kind = item, None, "text"
        if self.stable:
            data = first + dumps(body) if first else dumps(body)
            h = stable_hash(data)
            return h, self.count(h, body, len(data)), ttl, kind, data
        data = dumps(body)
        h = salted(first, hash(data)) if first else hash(data)
        return h, self.count(h, body, len(first) + len(data)), ttl, kind, data

    def blocks(self, items: Sequence[Any], first: bytes = b"") -> Segment:
        """The segment of a list of blocks, ``first`` hashed before the first."""
        seg = _empty()
        for n, item in enumerate(items):
            h, tokens, ttl, kind, data = self.block(item, first if n == 0 else b"")
            if kind in IMAGE_KINDS:
                seg.has_image = True
            seg.hashes.append(h)
            seg.tokens.append(tokens)
            seg.ttls.append(ttl)
            seg.kinds.append(kind)
            seg.texts.append(data if self.stable else b"")
        return seg

    def tools(self, tools: Any) -> Segment:
        if not isinstance(tools, list) or not tools:
            return _empty()
        return self._part(tools, lambda: self.blocks(tools, b"tools:"), tools)

    def system(self, parts: Positions) -> Segment:
        if not parts.system:
            return _empty()
        key = parts.system_source if parts.system_source is not None else parts.system
        return self._part(key, lambda: self.blocks(parts.system, b"system:"), parts.system)

    def message(self, message: Any, per_message: bool, *, memo: bool = True) -> Segment:
        """A message's positions; memoised (by identity, else by its bytes) unless ``memo`` is
        False: a shared history reaches each of its messages once, and serializing a whole
        message only to look it up doubles the cost of hashing its blocks."""
        if not isinstance(message, Mapping):
            return self.blocks([message], b"?:")
        first = salt(message)
        build: Callable[[], Segment]
        if per_message:  # OpenAI and vLLM: one position per message (or input item)
            build = lambda: self._one_message(message, first)  # noqa: E731
        else:
            content = content_blocks(message)
            build = lambda: self.blocks(content, first)  # noqa: E731
        return self._part(message, build, message) if memo else build()

    def _one_message(self, message: Mapping[str, Any], first: bytes) -> Segment:
        seg = self.blocks([as_rendered(message)], first)
        content = message.get("content")
        if isinstance(content, list):
            seg.has_image = any(
                isinstance(p, Mapping) and p.get("type") in IMAGE_TYPES for p in content
            )
        seg.kinds[0] = "message"
        return seg

    def _part(self, key_obj: Any, build: Callable[[], Segment], whole: Any) -> Segment:
        """A memoised segment: by identity of ``key_obj``, else by the bytes of ``whole``."""
        hit = self._by_id.get(id(key_obj))
        if hit is not None and hit[0] is key_obj:
            return hit[1]
        h = self.hash(dumps(whole))
        seg = self._by_bytes.get(h)
        if seg is None:
            seg = build()
            self._by_bytes[h] = seg
        self._by_id[id(key_obj)] = (key_obj, seg)
        return seg
