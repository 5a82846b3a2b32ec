"""Request bodies that share one history: the first ``count`` messages of one list.

The requests rebuilt from a session each send the whole conversation before their turn. Held
as separate lists, n turns cost n² references; `SharedHistory` holds the front of the body,
the session's one list of messages and a count, and builds the message list only when asked.
The flattener recognises it and appends each message's positions to one shared store once.

Two kinds of body share a history besides plain sessions: Codex rollouts (the list is the
Responses ``input``: ``key="input"``) and journaled Claude Code requests, whose breakpoints
move every request. Those carry ``overlay``: the breakpoints as (message, block, TTL), laid
over the shared positions, and ``materialize``, which builds the message list exactly as sent
(breakpoints placed) when a caller asks for it (``sent``: one of its messages).

A journaled request whose messages the list no longer holds past some point (a later request
sent the message there again, changed, and the list was cut there for it) keeps them as its
``tail``: its messages are ``base[:count]`` and then the tail, which is short.

``checked`` says that the list's messages are known well formed (objects whose content is
text, null or a list of objects): ipse built them from records it checked as it read them, so
the checks a request read as sent needs are not made again for each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any


@dataclass(slots=True, eq=False)
class SharedHistory(Mapping[str, Any]):
    """A request body: ``front`` (everything but the messages) and ``base[:count]`` then
    ``tail`` under ``key``; ``overlay``: breakpoints (message, block, TTL) the shared list
    does not hold. Equal to a mapping with the same items, as any mapping is."""

    front: Mapping[str, Any] = field(repr=False)
    base: list[Any] = field(repr=False)
    count: int
    _: KW_ONLY
    key: str = "messages"
    overlay: Sequence[tuple[int, int, str]] = field(default=(), repr=False)
    materialize: Callable[[], list[Any]] | None = field(default=None, repr=False)
    sent: Callable[[int], Any] | None = field(default=None, repr=False)
    tail: Sequence[Any] = field(default=(), repr=False)
    checked: bool = False
    # the items of ``base`` whose text the agent CLI wrote, not a person: what a session file
    # marks (Claude Code's ``isMeta`` records, its compaction summary) and the body cannot say
    harness: frozenset[int] = field(default=frozenset(), repr=False)

    @property
    def size(self) -> int:
        """How many messages (or input items) the body holds."""
        return self.count + len(self.tail)

    def message(self, i: int) -> Any:
        """Message ``i`` as sent (``IndexError`` past the end), without building the list:
        ``sent`` answers for a body built by ``materialize``."""
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(i)
        if self.sent is not None:
            return self.sent(i)
        return self.base[i] if i < self.count else self.tail[i - self.count]

    def head(self, n: int) -> list[Any]:
        """The first ``n`` messages (as the shared list and the tail hold them)."""
        out = self.base[: min(n, self.count)]
        out.extend(self.tail[: n - len(out)])
        return out

    def __getitem__(self, key: str) -> Any:
        if key == self.key:
            if self.materialize is not None:
                return self.materialize()
            return self.head(self.size)
        return self.front[key]

    def get(self, key: str, default: Any = None) -> Any:
        """(As `Mapping.get`, without its exception: asked once per request and block.)"""
        if key == self.key:
            return self[key]
        return self.front.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key == self.key or key in self.front

    def __iter__(self) -> Iterator[str]:
        yield from self.front
        if self.key not in self.front:
            yield self.key

    def __len__(self) -> int:
        return len(self.front) + (self.key not in self.front)
