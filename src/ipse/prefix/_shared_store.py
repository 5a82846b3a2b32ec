"""The one store of positions that the requests sharing a list of messages are views of.

A `SharedStore` holds the front (tools, system, settings), then each message's positions,
appended the first time a request reaches that message, with where each message ends and
which positions have a breakpoint. A `HistoryAppender` appends a message to it, in one pass
over the message's blocks: each block of a shared history is reached once, so nothing is
memoised on the way (a request flattened whole, `ipse.prefix._positions`, memoises parts
because requests repeat them). A request's own messages past what the store holds (`OwnTail`)
are appended the same way, to a scratch store that starts where the shared positions end.
Shared stores are for the fast hashes only, which the appender uses as ``hash`` itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from ipse.jsonio import is_object
from ipse.prefix._blocks import (
    RUN_KINDS,
    as_rendered,
    as_text,
    content_blocks,
    rendered_text,
    without_breakpoint,
)
from ipse.prefix._flat import Locator
from ipse.prefix._positions import PositionColumns, PositionWriter
from ipse.prefix._segments import BlockHasher, digest, salted
from ipse.transcript._shared import StoredMessage


class SharedStore(msgspec.Struct):
    """The positions of the requests that share one list of messages: the front (tools,
    system, settings), then each message's positions, appended the first time one is reached."""

    build: PositionColumns
    base: list[Any]
    keep: tuple[Any, Any]  # the tools and system the key names by identity, kept alive
    front: int  # positions before the first message
    marks: list[int]  # positions with a breakpoint
    ends: list[int] = msgspec.field(default_factory=list)  # positions through message i
    count: int = 0  # messages appended


class OwnTail(msgspec.Struct, frozen=True):
    """A body's own positions after the store's (`HistoryAppender.tail`), in the body's
    numbers."""

    hashes: list[int]
    chain: list[int]
    cum: list[int]
    ttls: list[str | None]
    where: list[Locator]
    groups: list[int]
    marks: list[int]
    ends: list[int]


NO_TAIL = OwnTail([], [], [], [], [], [], [], [])


class MessageEnds:
    """Where each message of a body with a tail ends: the store's, then the tail's."""

    __slots__ = ("_count", "_shared", "_tail")

    def __init__(self, shared: list[int], count: int, tail: list[int]) -> None:
        self._shared, self._count, self._tail = shared, count, tail

    def __getitem__(self, i: int) -> int:
        return self._shared[i] if i < self._count else self._tail[i - self._count]


def _last(build: PositionColumns) -> tuple[int, int, int]:
    """The prefix hash, the tokens and the lookback group through the last position."""
    if not build.chain:
        return 0, 0, -1
    return build.chain[-1], build.cum[-1], build.groups[-1]


_EMPTY = as_text("")  # what a message without blocks is hashed as (`content_blocks`)


class HistoryAppender:
    """Appends messages' positions to a `SharedStore` (what `PositionWriter.segment` of
    `BlockHasher.message` would append, without the memos)."""

    def __init__(self, hasher: BlockHasher, writer: PositionWriter) -> None:
        self.hasher = hasher
        self.writer = writer

    def extend(self, store: SharedStore, count: int, per_message: bool) -> None:
        """The store holding at least its list's first ``count`` messages' positions."""
        base = store.base
        for i in range(store.count, count):
            self.append(store, base[i], i, per_message)
        store.count = max(store.count, count)

    def tail(
        self, store: SharedStore, n: int, messages: Any, first: int, per_message: bool
    ) -> OwnTail:
        """The positions of a body's own messages (numbered from ``first``) after the store's
        first ``n``: appended as `append` appends to the store, to a build that starts where
        those ``n`` end."""
        shared = store.build
        seed = PositionColumns()
        if n:
            seed.hashes.append(shared.hashes[n - 1])
            seed.chain.append(shared.chain[n - 1])
            seed.cum.append(shared.cum[n - 1])
            seed.ttls.append(None)
            seed.where.append(shared.where[n - 1])
            seed.groups.append(shared.groups[n - 1])
        skip = len(seed.hashes)
        scratch = SharedStore(seed, [], store.keep, 0, [])
        for k, message in enumerate(messages):
            self.append(scratch, message, first + k, per_message)
        return OwnTail(
            hashes=seed.hashes[skip:],
            chain=seed.chain[skip:],
            cum=seed.cum[skip:],
            ttls=seed.ttls[skip:],
            where=seed.where[skip:],
            groups=seed.groups[skip:],
            marks=[n + m - skip for m in scratch.marks],
            ends=[n + e - skip for e in scratch.ends],
        )

    def append(self, store: SharedStore, message: Any, i: int, per_message: bool) -> None:
        """Message ``i``'s positions appended to the store, one per block."""
        if per_message or not is_object(message):
            self._append_whole(store, message, i, per_message)
            return
        build = store.build
        start = len(build.hashes)
        salt = self.hasher.role_salt(message)
        chain, total, group = _last(build)
        previous = ""
        for j, (block, (h, size, ttl, kind)) in enumerate(self._digests(message)):
            if not j:
                h, size = salted(salt, h), size + len(salt)
            tokens = self._tokens(h, size, block)
            chain = hash((chain, h))  # (`fast_chain`)
            total += tokens
            if not (kind == previous and kind in RUN_KINDS):
                group += 1
            previous = kind
            build.hashes.append(h)
            build.chain.append(chain)
            build.cum.append(total)
            build.ttls.append(ttl)
            build.where.append(("history", i, j))
            build.groups.append(group)
            if ttl is not None:
                build.breakpoints += 1
                store.marks.append(start + j)
        store.ends.append(len(build.hashes))

    def _digests(self, message: Any) -> Iterator[tuple[Any, tuple[int, int, str | None, str]]]:
        """Each block with its `digest`: as the reader took it, for a message whose blocks
        were digested as they were read and dropped (`StoredMessage`: no block, unless a
        counter needs its text), else the block's now."""
        if type(message) is StoredMessage and self.hasher.counter is None:
            notes = message.notes
            if notes and notes[0][2] is not None:
                return ((None, note[2]) for note in notes)
            if not notes:  # (null, or no blocks: the empty text block it stands for)
                return iter(((_EMPTY, digest(_EMPTY)),))
        content = message.get("content")
        if not (isinstance(content, list) and content):
            content = content_blocks(message)
        return ((block, digest(block)) for block in content)

    def _tokens(self, h: int, size: int, block: Any) -> int:
        """The tokens of ``block``, hashed ``h`` in ``size`` bytes (its salt's included)."""
        counts = self.hasher.token_counts
        tokens = counts.get(h)
        if tokens is None:
            if self.hasher.counter is None:
                tokens = counts[h] = max(1, size // 4)
            else:
                if is_object(block):
                    block = rendered_text(without_breakpoint(block)[0])
                tokens = self.hasher.count(h, block, size)
        return tokens

    def _append_whole(self, store: SharedStore, message: Any, i: int, per_message: bool) -> None:
        """`append` for a message hashed whole (``per_message``) or that is not an object:
        inline for an object (the eight calls and three structs of `PositionWriter.segment`
        cost more than hashing it: a Codex rollout's replay is mostly this), else through
        `BlockHasher.message` and `PositionWriter.segment`, unmemoised."""
        build = store.build
        start = len(build.hashes)
        if per_message and is_object(message):
            h, tokens, ttl, _, _ = self.hasher.block(
                as_rendered(message), self.hasher.role_salt(message)
            )
            chain, total, group = _last(build)
            build.hashes.append(h)
            build.chain.append(hash((chain, h)))  # (fast)
            build.cum.append(total + tokens)
            build.ttls.append(ttl)
            build.where.append(("history", i, 0))
            build.groups.append(group + 1)
            if ttl is not None:
                build.breakpoints += 1
                store.marks.append(start)
            store.ends.append(start + 1)
            return
        seg = self.hasher.message(message, per_message, memo=False)
        self.writer.segment(build, seg, "history", i, memo=False)
        store.marks.extend(start + j for j, ttl in enumerate(seg.ttls) if ttl is not None)
        store.ends.append(len(build.hashes))
