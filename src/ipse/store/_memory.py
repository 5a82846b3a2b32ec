"""The in-memory backend: the reference every other backend is tested against.

It holds everything in dicts behind one lock, so it is single-process by nature; its value is
being obviously right. The clock is injectable so the reference semantics of lease expiry can
be tested without sleeping.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ipse.errors import StaleWriter, WriterConflict
from ipse.store._base import Lease, SnapshotRecord, check_ttl, check_twin_id


class MemoryBackend:
    """Leases and snapshot history in process memory."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.url = "memory://"
        self._clock = clock
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        self._history: dict[str, list[SnapshotRecord]] = {}

    def acquire(self, twin_id: str, holder: str, ttl: float) -> Lease:
        check_twin_id(twin_id)
        ttl = check_ttl(ttl)
        with self._lock:
            now = self._clock()
            lease = self._take(twin_id, holder, now)
            lease = self._leases[twin_id] = replace(lease, expires_at=now + ttl)
            return lease

    def _take(self, twin_id: str, holder: str, now: float) -> Lease:
        """The twin's next lease for ``holder`` (expiring ``now``: the caller sets its end);
        `WriterConflict` while another holder's lease lasts. Call under the lock."""
        current = self._leases.get(twin_id)
        if current is not None and current.expires_at > now and current.holder != holder:
            raise WriterConflict(
                f"twin {twin_id!r} is being written by {current.holder!r} "
                f"(lease token {current.token})"
            )
        token = 1 if current is None else current.token + 1
        return Lease(twin_id, holder, token, now)

    def _check_current(self, lease: Lease, now: float) -> None:
        current = self._leases.get(lease.twin_id)
        if current is None or current.token != lease.token or current.holder != lease.holder:
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} was taken over; "
                "nothing was written"
            )
        if current.expires_at <= now:
            raise StaleWriter(
                f"lease token {lease.token} of twin {lease.twin_id!r} expired; nothing was written"
            )

    def renew(self, lease: Lease, ttl: float) -> Lease:
        ttl = check_ttl(ttl)
        with self._lock:
            now = self._clock()
            self._check_current(lease, now)
            renewed = Lease(lease.twin_id, lease.holder, lease.token, now + ttl)
            self._leases[lease.twin_id] = renewed
            return renewed

    def release(self, lease: Lease) -> None:
        with self._lock:
            current = self._leases.get(lease.twin_id)
            if current is not None and current.token == lease.token:
                self._leases[lease.twin_id] = Lease(
                    lease.twin_id, lease.holder, lease.token, min(current.expires_at, 0.0)
                )

    def append(
        self,
        lease: Lease,
        *,
        body: Mapping[str, Any],
        state_hash: str,
        schema: int,
        notes: Sequence[Mapping[str, Any]] = (),
    ) -> SnapshotRecord:
        with self._lock:
            now = self._clock()
            self._check_current(lease, now)
            history = self._history.setdefault(lease.twin_id, [])
            record = SnapshotRecord(
                twin_id=lease.twin_id,
                version=len(history) + 1,
                state_hash=state_hash,
                schema=schema,
                body=copy.deepcopy(dict(body)),
                created_at=now,
                writer=lease.holder,
                token=lease.token,
                notes=tuple(copy.deepcopy(dict(n)) for n in notes),
            )
            history.append(record)
            return _copy(record)

    def append_after(
        self,
        twin_id: str,
        holder: str,
        *,
        after: int,
        body: Mapping[str, Any],
        state_hash: str,
        schema: int,
        notes: Sequence[Mapping[str, Any]] = (),
        ttl: float = 30.0,
    ) -> SnapshotRecord | None:
        check_twin_id(twin_id)
        check_ttl(ttl)
        with self._lock:
            now = self._clock()
            lease = self._take(twin_id, holder, now)
            self._leases[twin_id] = replace(lease, expires_at=0.0)  # given up at once
            history = self._history.setdefault(twin_id, [])
            if len(history) != after:
                return None
            record = SnapshotRecord(
                twin_id=twin_id,
                version=after + 1,
                state_hash=state_hash,
                schema=schema,
                body=copy.deepcopy(dict(body)),
                created_at=now,
                writer=holder,
                token=lease.token,
                notes=tuple(copy.deepcopy(dict(n)) for n in notes),
            )
            history.append(record)
            return _copy(record)

    def latest(self, twin_id: str, newer_than: int = 0) -> SnapshotRecord | None:
        with self._lock:
            history = self._history.get(twin_id)
            return _copy(history[-1]) if history and len(history) > newer_than else None

    def latest_version(self, twin_id: str) -> int | None:
        with self._lock:
            history = self._history.get(twin_id)
            return len(history) if history else None

    def history(self, twin_id: str) -> list[SnapshotRecord]:
        with self._lock:
            return [_copy(r) for r in self._history.get(twin_id, [])]

    def twins(self) -> list[str]:
        with self._lock:
            return sorted(t for t, h in self._history.items() if h)

    def close(self) -> None:
        """Nothing to release."""


def _copy(record: SnapshotRecord) -> SnapshotRecord:
    """A deep copy, so callers cannot change stored history through a returned record."""
    return copy.deepcopy(record)
