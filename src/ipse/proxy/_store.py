"""What a proxy stores before it acknowledges: the archive of what a handoff removed, and each
request's count in its conversation (anchor, counters).

Any replica behind a load balancer may take a conversation's next request, so what one replica
acknowledges is stored first: what a handoff removed is in the archive before the rewritten
request leaves (`ProxyStore.archive`, awaited on the request's path), and the request is counted
in its conversation while it is upstream, before its answer's last event goes back
(`ProxyStore.start_count`, awaited by the relay through `ProxyStore.wait_for_count`). A store
that hangs delays a request by `STORE_WAIT` seconds at most, never stops it.

The writes run on threads of their own, off the event loop: the archive on one (its one
connection serialises the transactions, and a SQLite connection may only be used by the thread
that opened it), the counts on two.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ipse import _notes
from ipse._redact import redact
from ipse.proxy._exchange import Exchange, identify_conversation

_log = _notes.logger("ipse.proxy")
STORE_WAIT = 5.0  # seconds a request waits, at most, for the store (archive, count)


class Recent(OrderedDict[Hashable, Any]):
    """A mapping that keeps its ``limit`` most recently set keys."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Hashable, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class RemovedItems:
    """One request's archive sink: what its handoff removed, kept until the proxy writes it to
    the archive (`ProxyStore.archive`), before the rewritten request leaves."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, tuple[Any, ...], str]] = []

    def put(self, session: str, removed: Sequence[Any], source: str) -> int:
        items = tuple(removed)
        self.puts.append((session, items, source))
        return len(items)


class ProxyStore:
    """The proxy's writes to ipse's store (``url``; None: the default store), each on its own
    threads; ``wait`` is how long a request waits for one, at most."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self.wait = STORE_WAIT
        self._counting = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ipse-proxy-count")
        self._archiving = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipse-proxy-archive")
        self._conversations: Any = None
        self._archive: Any = None
        self._archive_lock = threading.Lock()

    # ------------------------------------------------------------------ the archive

    async def archive_removed(self, puts: Sequence[tuple[str, Sequence[Any], str]]) -> None:
        """`archive` on the archive's thread; `TimeoutError` after ``wait`` seconds."""
        future = self._archiving.submit(lambda: self.archive(puts))
        await asyncio.wait_for(asyncio.wrap_future(future), self.wait)

    def archive(self, puts: Sequence[tuple[str, Sequence[Any], str]]) -> None:
        """Write what a handoff removed to the archive (idempotent: content addressed, an item
        already there is kept as it is, so replicas and retries may write it again)."""
        if (self.url or "").startswith("memory:"):
            return  # an in-memory store keeps no archive
        with self._archive_lock:  # one connection: its transactions one at a time
            if self._archive is None:
                from ipse.archive._shared import LazyArchive

                self._archive = LazyArchive(self.url)
            for session, removed, source in puts:
                self._archive.put(session, removed, source)

    # ------------------------------------------------------------------ the conversation

    def start_count(self, ex: Exchange) -> Future[int | None] | None:
        """Start counting the request in its conversation (`count`) while it goes upstream; the
        answer's end waits for it (`wait_for_count`): a replica killed after answering has
        already stored what it answered."""
        if ex.dialect is None:
            return None
        return self._counting.submit(self._count_logged, ex)

    def _count_logged(self, ex: Exchange) -> int | None:
        try:
            identify_conversation(ex, keep=False)
            return self.count(ex)
        except Exception:  # bookkeeping never takes the proxy down
            _log.exception("ipse proxy: counting the request failed")
            return None

    def count(self, ex: Exchange) -> int | None:
        """Count the request in its conversation's state (a request sent again unchanged counts
        once); the conversation's requests so far. Whether a rewritten request is the
        conversation's handoff is the store's answer (``ex.handoff_event``): the first request
        at its cut, whichever replica counted it. Without the store's answer, it is the first
        request this process cut there."""
        rewrite = ex.rewrite if ex.handed_off else None
        ex.handoff_event = rewrite is not None and not rewrite.cached
        if ex.key is None:
            return None
        from ipse.store._shared import request_digest

        digest = request_digest(ex.method, ex.path, ex.query, ex.client_body)
        try:
            state = self.conversations().record(
                ex.key,
                anchor=rewrite.anchor if rewrite is not None else None,
                handoff=rewrite is not None,
                removed_calls=rewrite.removed_calls if rewrite is not None else 0,
                removed_bytes=ex.saved_bytes,
                request=digest,
            )
        except Exception as exc:
            _log.warning("ipse proxy: the conversation store failed: %s", redact(str(exc)))
            return None
        ex.handoff_event = rewrite is not None and state.made_cut(digest)
        return int(state.requests)

    async def wait_for_count(self, ex: Exchange) -> None:
        """Wait for the request's count (`start_count`), at most ``wait`` seconds: a database
        that hangs delays answers by that much, never stops them."""
        if ex.counted is None or ex.counted.done():
            return
        waiter = asyncio.wrap_future(ex.counted)
        done, _ = await asyncio.wait({waiter}, timeout=self.wait)
        if not done:
            _log.warning("ipse proxy: the conversation store is slow; answering before the count")

    def conversations(self) -> Any:
        """The conversation store (opened on first use)."""
        if self._conversations is None:
            from ipse.store import open_conversations

            self._conversations = open_conversations(self.url)
        return self._conversations

    def close(self) -> None:
        """Finish the writes under way, then close the stores."""
        self._counting.shutdown(wait=True)
        self._archiving.shutdown(wait=True)
        for closable in (self._conversations, self._archive):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()


__all__ = ["STORE_WAIT", "ProxyStore", "Recent", "RemovedItems"]
