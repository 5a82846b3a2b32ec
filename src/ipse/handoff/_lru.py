"""A small thread-safe cache that forgets the least recently used entry first: what the wire
rewrites keep between requests (rewritten prefixes, refusals, the autopilot's cuts and plans),
bounded so a proxy serving many conversations holds only the newest."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class LruCache:
    """At most ``size`` entries; `get` refreshes an entry, `put` evicts the stalest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The entry under ``key`` (None: none)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry: Any) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


__all__ = ["LruCache"]
