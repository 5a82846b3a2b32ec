"""The `Flat` of a request whose messages are the first of a list other requests share
(`ipse.prefix._growing.SharedHistory`): a view of one store, not a copy of its history.

The positions are those a whole flatten gives, computed once per message for every request
that shares the list: each message is appended to the list's `SharedStore` the first time a
request reaches it, and a request is a view of the store's first positions, with its own layer
names after its last assistant turn (``input``), its own breakpoints laid over the shared
positions (a journaled request's, and automatic caching's on its last block), and the
messages the list no longer holds for it (its ``tail``) as positions of its own after those.
What a request's front (everything but its messages) gives is worked out once per front.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from ipse.jsonio import is_object
from ipse.prefix._blocks import IMAGE_KINDS, holds_image_in, last_assistant
from ipse.prefix._columns import Column, InputWhere, OverlayTtls
from ipse.prefix._flat import Flat
from ipse.prefix._growing import SharedHistory
from ipse.prefix._positions import PositionColumns, PositionWriter, setting_values
from ipse.prefix._rules import Rules
from ipse.prefix._shared_store import NO_TAIL, HistoryAppender, MessageEnds, OwnTail, SharedStore
from ipse.transcript._shared import Codec, Positions, StoredMessage, body_codec

# (front, key, has_image) -> what a front that many requests share gives (the front kept, so
# that its id is not reused while the entry lives): its settings, codec, positions, store key
_Front = tuple[Any, dict[str, bytes], Codec, Positions, Any]


class SharedHistoryFlattener:
    """Flattens `SharedHistory` bodies into views of their list's store."""

    def __init__(self, rules: Rules, writer: PositionWriter) -> None:
        self.rules = rules
        self.writer = writer
        self.appender = HistoryAppender(writer.hasher, writer)
        self._anthropic = rules.provider == "anthropic"
        self._stores: dict[tuple[Any, ...], SharedStore] = {}
        self._fronts: dict[tuple[int, str, bool], _Front] = {}
        self._images: dict[int, tuple[list[Any], int, int]] = {}

    def flatten(self, body: SharedHistory) -> Flat:
        """The request's positions, as a view of its list's store."""
        base, count, own = body.base, body.count, body.tail
        has_image = self._first_image(base, count) < count or any(map(holds_image_in, own))
        _, settings, dialect, parts, front_key = self._front(body, has_image)
        store = self._store(body, parts, settings, front_key)
        build = store.build
        n = store.ends[count - 1] if count else store.front
        marks = store.marks[: bisect.bisect_right(store.marks, n - 1)]
        tail = NO_TAIL
        end: Callable[[int], int] = store.ends.__getitem__  # the position after message i's
        if own:
            tail = self.appender.tail(store, n, own, count, parts.per_message)
            marks.extend(tail.marks)
            end = MessageEnds(store.ends, count, tail.ends).__getitem__
        last = _last_shared_assistant(dialect, base, count, own)
        total = n + len(tail.hashes)
        overlay: dict[int, str] = {}
        for i, j, ttl in body.overlay:  # the request's own breakpoints on shared blocks
            overlay[(end(i - 1) if i else store.front) + j] = ttl
        if overlay:
            marks = sorted({*marks, *overlay})
        breakpoints = len(marks)
        auto = body.front.get("cache_control")
        if self._anthropic and auto is not None and total:
            marks = _automatic_breakpoint(build, tail, n, total, auto, overlay, marks)
            breakpoints += 1
        model = body.front.get("model")
        return Flat(
            model=model if isinstance(model, str) else None,
            hashes=Column(build.hashes, n, tail.hashes),
            chain=Column(build.chain, n, tail.chain),
            cum=Column(build.cum, n, tail.cum),
            ttls=(
                OverlayTtls(build.ttls, n, overlay, tail.ttls)
                if overlay
                else Column(build.ttls, n, tail.ttls)
            ),
            where=InputWhere(build.where, n, store.front if last < 0 else end(last), tail.where),
            groups=Column(build.groups, n, tail.groups),
            settings=build.settings,
            setting_names=build.setting_names,
            tail=store.front if last <= 0 else end(last - 1),
            messages=count + len(own),
            breakpoints=breakpoints,
            marks=marks,
            store=store,
            stored=n,
            first_message=_first_message(store, n, tail),
        )

    def _front(self, body: SharedHistory, has_image: bool) -> _Front:
        """The settings, codec and front positions of a shared body's front (everything but
        its messages), worked out once per front object, and the key of its store."""
        front = body.front
        key = (id(front), body.key, has_image)
        known = self._fronts.get(key)
        if known is not None and known[0] is front:
            return known
        settings = setting_values(self.rules, front, has_image)
        dialect = body_codec(body, self.rules.provider)
        parts = dialect.positions(front)
        front_key = (id(parts.tools), id(parts.system_source), tuple(settings.items()))
        self._fronts[key] = (front, settings, dialect, parts, front_key)
        return self._fronts[key]

    def _store(
        self, body: SharedHistory, parts: Positions, settings: Any, front_key: Any
    ) -> SharedStore:
        """The store of the list ``body`` shares, holding at least its first ``count``
        messages' positions (each message appended the first time a body reaches it)."""
        base = body.base
        key = (id(base), *front_key)
        store = self._stores.get(key)
        if store is None or store.base is not base:
            store = self._new_store(base, parts, settings)
            self._stores[key] = store
        self.appender.extend(store, body.count, parts.per_message)
        return store

    def _new_store(
        self, base: list[Any], parts: Positions, settings: dict[str, bytes]
    ) -> SharedStore:
        """A store holding the positions before the first message (order ends with messages)."""
        writer = self.writer
        build = PositionColumns(settings=settings)
        levels = writer.levels(settings)
        writer.settings(build, levels.get("all", ()))
        for layer in writer.order[:-2]:
            writer.front_layer(build, layer, parts, levels)
        marks = [p for p, ttl in enumerate(build.ttls) if ttl is not None]
        return SharedStore(
            build, base, (parts.tools, parts.system_source), len(build.hashes), marks
        )

    def _first_image(self, base: list[Any], count: int) -> int:
        """The index of the first message of ``base[:count]`` holding an image (else count),
        each message looked at once for all the bodies sharing ``base``."""
        seen = self._images.get(id(base))
        scanned, first = (seen[1], seen[2]) if seen is not None and seen[0] is base else (0, -1)
        if first < 0 and scanned < count:
            first = _image_from(base, scanned, count)
            self._images[id(base)] = (base, count, first)
        return first if first >= 0 else count


def _image_from(base: list[Any], start: int, count: int) -> int:
    """The first of messages ``start .. count-1`` holding an image (-1: none). (`holds_image_in`
    inline: every message of a session is asked.)"""
    for i in range(start, count):
        message = base[i]  # (a dict is an object: `is_object` asked only of others)
        if type(message) is StoredMessage:  # (its notes say, without reading it back)
            if holds_image_in(message):
                return i
            continue
        content = message.get("content") if type(message) is dict or is_object(message) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if type(block) is dict or is_object(block):
                kind = block.get("type")
                if isinstance(kind, str) and kind in IMAGE_KINDS:
                    return i
    return -1


def _first_message(store: SharedStore, n: int, tail: OwnTail) -> int | None:
    """The hash of the request's first message position (None: it has none)."""
    if n > store.front:
        return store.build.hashes[store.front]
    return tail.hashes[0] if tail.hashes else None


def _last_shared_assistant(dialect: Codec, base: list[Any], count: int, own: Sequence[Any]) -> int:
    """`last_assistant` of a shared body: its own tail (numbered from ``count``), else the
    shared list's first ``count`` messages (read in place, not copied)."""
    k = last_assistant(own, dialect)
    if k >= 0:
        return count + k
    for i in range(count - 1, -1, -1):
        if dialect.speaker(base[i]) == "assistant":
            return i
    return -1


def _automatic_breakpoint(
    build: PositionColumns,
    tail: OwnTail,
    n: int,
    total: int,
    auto: Any,
    overlay: dict[int, str],
    marks: list[int],
) -> list[int]:
    """Anthropic's automatic breakpoint (the body's top-level ``cache_control``) on its last
    position that is not a setting, added to ``overlay`` and to the marks returned unless a
    breakpoint is there already."""
    at = total - 1
    while at > 0 and at < n and build.where[at][0] == "settings":
        at -= 1
    ttl_at = build.ttls[at] if at < n else tail.ttls[at - n]
    if overlay.get(at, ttl_at) is None:
        overlay[at] = "1h" if is_object(auto) and auto.get("ttl") == "1h" else "5m"
        marks = sorted([*marks, at])
    return marks
