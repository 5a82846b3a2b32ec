"""Request bodies that share one history: the first ``count`` messages of one list.

The requests rebuilt from a session each send the whole conversation before their turn. Held
as separate lists, n turns cost n² references; `SharedHistory` holds the front of the body,
the session's one list of messages and a count, and builds the message list only when asked.
The flattener recognises it and appends each message's positions to one shared store once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class SharedHistory(Mapping[str, Any]):
    """A request body: ``front`` (everything but the messages) and ``base[:count]``."""

    __slots__ = ("base", "count", "front")

    def __init__(self, front: Mapping[str, Any], base: list[Any], count: int) -> None:
        self.front = front
        self.base = base
        self.count = count

    def __getitem__(self, key: str) -> Any:
        if key == "messages":
            return self.base[: self.count]
        return self.front[key]

    def __contains__(self, key: object) -> bool:
        return key == "messages" or key in self.front

    def __iter__(self) -> Iterator[str]:
        yield from self.front
        if "messages" not in self.front:
            yield "messages"

    def __len__(self) -> int:
        return len(self.front) + ("messages" not in self.front)
