"""Group commit: concurrent callers' writes of one process share one transaction (and their
reads one query).

A caller hands its request to `GroupCommit.submit` and gets its own outcome back once the
transaction holding it has committed (or its own error). At most ``leaders`` batches are in
flight at once; a caller that arrives while they all are waits, and the next batch takes every
request waiting by then (at most ``max_batch``). A caller alone is never delayed: with a free
slot it leads a batch of one at once. Which batch a request joins is the only thing it shares
with the others: ``run`` must give every request of a batch its own outcome (falling back to
one transaction each when the shared one fails).

A leader leads until its own request is done, then hands leading to the oldest waiting
caller, so no caller serves the others for long. Nothing runs in the background.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)
class Request:
    """One caller's write or read: its input, and its outcome once done."""

    params: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = False
    leading: bool = False
    wake: threading.Event | None = None  # made, under the lock, only for a caller who waits

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class GroupCommit:
    """Batches of concurrent requests, each batch run by ``run`` (one transaction or query)."""

    def __init__(
        self, run: Callable[[Sequence[Request]], None], *, leaders: int = 1, max_batch: int = 64
    ) -> None:
        self._run = run
        self._leaders = max(1, leaders)
        self._max_batch = max(1, max_batch)
        self._active = 0
        self._queue: list[Request] = []
        self._lock = threading.Lock()
        self.batches = 0  # batches run (for tests and benchmarks)
        self.largest = 0  # the most requests one batch held

    def submit(self, params: Any) -> Any:
        """Run ``params`` in the next batch; its result, or its error raised."""
        request = Request(params)
        with self._lock:
            self._queue.append(request)
            if self._active < self._leaders:
                self._active += 1
                request.leading = True
            else:
                request.wake = threading.Event()
        if request.wake is not None:
            request.wake.wait()
        if request.leading:
            self._lead(request)
        return request.outcome()

    def _lead(self, own: Request) -> None:
        """Run batches until ``own`` is done, then hand leading on (or give the slot up)."""
        handed = False
        try:
            while True:
                if own.wake is not None:
                    own.wake.clear()  # before looking, so that a wake-up after it is not lost
                with self._lock:
                    if own.done:
                        break
                    batch = self._queue[: self._max_batch]
                    del self._queue[: self._max_batch]
                    if batch:
                        self.batches += 1
                        self.largest = max(self.largest, len(batch))
                    elif own.wake is None:
                        own.wake = threading.Event()
                if batch:
                    self._run_batch(batch)
                elif own.wake is not None:  # another leader took ``own``: wait for it
                    own.wake.wait()
            with self._lock:
                handed = self._promote()
        finally:
            if not handed:
                self._give_up_slot()

    def _promote(self) -> bool:
        """Make the oldest waiting caller lead, if any (under the lock); whether one did. A
        request already leading (its leader has not taken it yet) is not a waiting one."""
        for request in self._queue:
            if not request.leading:
                request.leading = True
                assert request.wake is not None  # every waiting caller has one
                request.wake.set()
                return True
        return False

    def _give_up_slot(self) -> None:
        with self._lock:
            self._active -= 1
            if self._active < self._leaders and self._promote():
                self._active += 1

    def _run_batch(self, batch: Sequence[Request]) -> None:
        try:
            self._run(batch)
        except BaseException as exc:  # no caller of the batch is left waiting
            for request in batch:
                if not request.done and request.error is None:
                    request.error = exc
            raise
        finally:
            with self._lock:
                for request in batch:
                    request.done = True
                wakes = [r.wake for r in batch if r.wake is not None]
            for wake in wakes:
                wake.set()
