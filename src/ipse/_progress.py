"""Progress of long work: reported by the library, shown (or not) by a front end.

The library says how far it is with `update` (a label, work done, the total when known): reading
a large file reports its bytes, a replay its requests. Nothing is shown unless a front end has
installed a `Sink` with `reporting` (the CLI shows a bar on a terminal once work has taken more
than a second, and nothing when piped or with ``--json``). Without a sink an update costs one
context-variable lookup, so the library reports freely.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

T = TypeVar("T")


class Sink(Protocol):
    """Receives progress updates (a front end's bar, a log)."""

    def update(self, label: str, done: float, total: float | None) -> None: ...


_SINK: ContextVar[Sink | None] = ContextVar("ipse_progress", default=None)


@contextmanager
def reporting(sink: Sink | None) -> Iterator[None]:
    """Send the updates made inside the block to ``sink`` (None: to nobody)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def update(label: str, done: float, total: float | None = None) -> None:
    """Report ``done`` of ``total`` units of the work named ``label``."""
    sink = _SINK.get()
    if sink is not None:
        sink.update(label, done, total)


def active() -> bool:
    """Whether anyone is listening (to skip preparing updates nobody sees)."""
    return _SINK.get() is not None


def track(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items``, reporting each one done."""
    sink = _SINK.get()
    if sink is None:
        yield from items
        return
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    for done, item in enumerate(items, start=1):
        yield item
        sink.update(label, done, total)


__all__ = ["Sink", "active", "reporting", "track", "update"]
