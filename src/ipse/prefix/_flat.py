"""One request as a sequence of cache positions: what `ipse.prefix._hashing.Flattener` makes of a
request body, and what the simulator, the causes and the replay read.

Each position has a content hash, a chained prefix hash (equal chains: an equal prefix up to
there), its cumulative token estimate, its breakpoint (``cache_control``) and where it sits in
the request (`Locator`). A request rebuilt from a session holds views of one store its
neighbours share (`ipse.prefix._columns`), so its size does not follow the history's.

A msgspec struct, not a dataclass: one is made per request (see `ipse.prefix`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import msgspec

from ipse.prefix._columns import backing

# (layer, first index, second index): tools (tool, -1), system (block, -1), settings (n, -1),
# history / input (message, block).
Locator: TypeAlias = tuple[str, int, int]

MESSAGE_LAYERS = ("history", "input")  # the layers of message positions


class Flat(msgspec.Struct):
    """One request as a sequence of cache positions."""

    model: str | None
    hashes: Sequence[int] = ()  # content hash per position
    chain: Sequence[int] = ()  # prefix hash through each position
    cum: Sequence[int] = ()  # estimated tokens through each position
    ttls: Sequence[str | None] = ()  # breakpoint at the position
    where: Sequence[Locator] = ()
    groups: Sequence[int] = ()  # lookback position number
    # cache-relevant settings, as canonical JSON
    settings: dict[str, bytes] = msgspec.field(default_factory=dict)
    setting_names: list[str] = msgspec.field(default_factory=list)  # settings positions, in order
    tail: int = 0  # first position of the new tail (the last assistant turn onward)
    messages: int = 0
    breakpoints: int = 0  # cache_control markers found, automatic caching included
    texts: Sequence[bytes] = ()  # the hashed bytes (kept by stable flattens)
    marks: Sequence[int] = ()  # the positions that have a breakpoint, in order
    store: object = None  # the positions' shared store, when other requests share it
    stored: int = 0  # how many of the positions are the store's (the rest are the body's own)
    first_message: int | None = None  # the hash of the first message's first position

    @property
    def total(self) -> int:
        cum = self.cum
        n = len(cum)
        return backing(cum)[n - 1] if n else 0  # (a store's list: no view's checks)

    def tokens_before(self, position: int) -> int:
        """Estimated tokens of positions ``0 .. position-1``."""
        if position <= 0:
            return 0
        if position > len(self.cum):
            raise IndexError("position out of range")
        return backing(self.cum)[position - 1]

    def extends(self, other: Flat) -> bool:
        """Whether ``other``'s positions are the first of this request's (known without
        comparing: both are views of one store; False says nothing)."""
        return (
            self.store is not None
            and self.store is other.store
            and other.stored == len(other.chain)
            and len(other.chain) <= self.stored
        )
