"""Read-only views of the first ``n`` entries of a list that later requests keep appending to.

The requests rebuilt from one session each repeat the whole history before them; their cache
positions are the first ``n`` positions of one shared, append-only store, so a request's
`Flat` is a set of these views (constant size) instead of copies (size of the history). Two
positions differ between requests sharing a store, and views overlay them: the layer name of
the messages after the last assistant turn (``input`` in this request, ``history`` in later
ones) and the breakpoint that automatic caching puts on the last block. A request whose last
messages the store no longer holds (a journaled request another one cut short) has them after
its ``n`` shared positions, as a short ``tail`` of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class Column(Sequence[T]):
    """The first ``n`` entries of ``data`` (which may grow past ``n``), then ``tail``."""

    __slots__ = ("_data", "_len", "_n", "_tail")

    def __init__(self, data: list[T], n: int, tail: Sequence[T] = ()) -> None:
        self._data = data
        self._n = n
        self._tail = tail
        self._len = n + len(tail)

    def __len__(self) -> int:
        return self._len

    def _at(self, i: int) -> T:
        """What the view shows at ``i`` (subclasses lay their own entries over the data)."""
        return self._data[i] if i < self._n else self._tail[i - self._n]

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("position out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[T]:
        shared = itertools.islice(self._data, self._n)
        return itertools.chain(shared, self._tail) if self._tail else shared

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


def backing(seq: Sequence[T]) -> Sequence[T]:
    """The list behind a plain `Column` without a tail (entries past ``len(seq)`` belong to
    later requests: read only positions below it), else ``seq`` itself: for loops that read
    many positions."""
    return seq._data if type(seq) is Column and not seq._tail else seq


class InputWhere(Column[tuple[str, int, int]]):
    """Locators, with the message positions from ``start`` on named ``input``."""

    __slots__ = ("_start",)

    def __init__(
        self,
        data: list[tuple[str, int, int]],
        n: int,
        start: int,
        tail: Sequence[tuple[str, int, int]] = (),
    ) -> None:
        super().__init__(data, n, tail)
        self._start = start

    def _at(self, i: int) -> tuple[str, int, int]:
        where = self._data[i] if i < self._n else self._tail[i - self._n]
        if i >= self._start and where[0] == "history":
            return ("input", where[1], where[2])
        return where

    def __iter__(self) -> Iterator[tuple[str, int, int]]:
        return (self._at(i) for i in range(self._len))


class OverlayTtls(Column[str | None]):
    """Breakpoint TTLs, with ``overlay`` (position -> TTL) laid over the shared ones: the
    breakpoints a journaled request placed, and automatic caching's last block."""

    __slots__ = ("_overlay",)

    def __init__(
        self,
        data: list[str | None],
        n: int,
        overlay: dict[int, str],
        tail: Sequence[str | None] = (),
    ) -> None:
        super().__init__(data, n, tail)
        self._overlay = overlay

    def _at(self, i: int) -> str | None:
        if i in self._overlay:
            return self._overlay[i]
        return self._data[i] if i < self._n else self._tail[i - self._n]

    def __iter__(self) -> Iterator[str | None]:
        return (self._at(i) for i in range(self._len))
