"""Group commit: concurrent callers' writes of one process share one transaction.

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
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Request:
    """One caller's write: its input, and its outcome once done."""

    params: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = False
    leading: bool = False
    wake: threading.Event = field(default_factory=threading.Event)  # done, or leading

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class GroupCommit:
    """Batches of concurrent requests, each batch run by ``run`` (one transaction)."""

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
        if not request.leading:
            request.wake.wait()
        if request.leading:
            self._lead(request)
        return request.outcome()

    def _lead(self, own: Request) -> None:
        """Run batches until ``own`` is done, then hand leading on (or give the slot up)."""
        handed = False
        try:
            while True:
                own.wake.clear()  # before looking, so that a wake-up after it is not lost
                with self._lock:
                    if own.done:
                        break
                    batch = self._queue[: self._max_batch]
                    del self._queue[: self._max_batch]
                    if batch:
                        self.batches += 1
                        self.largest = max(self.largest, len(batch))
                if batch:
                    self._run_batch(batch)
                else:  # another leader took ``own``: wait for it
                    own.wake.wait()
            with self._lock:
                if self._queue:
                    head = self._queue[0]
                    head.leading = handed = True
                    head.wake.set()
        finally:
            if not handed:
                self._give_up_slot()

    def _give_up_slot(self) -> None:
        with self._lock:
            self._active -= 1
            if self._queue and self._active < self._leaders:
                self._active += 1
                self._queue[0].leading = True
                self._queue[0].wake.set()

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
            for request in batch:
                request.wake.set()
