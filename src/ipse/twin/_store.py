"""The twin store: a storage backend seen through twin states, plus `maybe_snapshot`.

`open_store(url)` opens a backend (`ipse.store.open_backend`) and wraps it so callers trade in
`TwinState` values: ``write`` serializes the state at the current schema with its identity hash;
``latest`` and ``history`` return `Snapshot` values holding the record exactly as stored and the
state loaded (and migrated) from it. The single-writer rules are the backend's.

Stored snapshots are immutable (the history is append-only), so the store keeps the last
decoded snapshot of each twin and reuses it while the database's newest version for that twin
is still the same one: ``latest`` always asks the database (one query that returns a row only
when there is a newer version), but decodes only what is new. ``write_after`` stores a state
only on top of the version it was computed from, under the twin's lease taken and given up in
the same transaction. Treat returned snapshots as read-only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import Any

from ipse.errors import InputError
from ipse.store import SnapshotBackend, open_backend
from ipse.store._shared import Lease, SnapshotRecord
from ipse.twin._identity import DEFAULT_POLICY, IdentityPolicy, identity_view, state_hash
from ipse.twin._schema import dump_state, load_snapshot
from ipse.twin._state import CURRENT_SCHEMA, TwinState


@dataclass(frozen=True)
class Snapshot:
    """One stored snapshot: the record as stored, and its state at the current schema."""

    record: SnapshotRecord

    @cached_property
    def state(self) -> TwinState:
        """The stored body loaded through the schema migrations (the record is unchanged)."""
        return load_snapshot(self.record.body)

    @cached_property
    def identity(self) -> dict[str, Any]:
        """The state's identity view, every field (`identity_view`); read-only."""
        return identity_view(self.state)

    @property
    def version(self) -> int:
        """The snapshot's position in the twin's history, from 1."""
        return self.record.version

    @property
    def state_hash(self) -> str:
        """The identity hash stored with the snapshot."""
        return self.record.state_hash

    @property
    def schema(self) -> int:
        """The schema version the body was written in."""
        return self.record.schema


class TwinStore:
    """Twin snapshots on a backend: leases, writes of states, latest and history."""

    def __init__(self, backend: SnapshotBackend, *, cache: bool = True) -> None:
        self.backend = backend
        self.cache = cache
        self._decoded: dict[str, Snapshot] = {}

    @property
    def url(self) -> str:
        """The backend's URL."""
        return self.backend.url

    def acquire(self, twin_id: str, holder: str, ttl: float = 30.0) -> Lease:
        """Take the twin's lease; `WriterConflict` while another holder's lease lasts."""
        return self.backend.acquire(twin_id, holder, ttl)

    def renew(self, lease: Lease, ttl: float = 30.0) -> Lease:
        """Extend a current lease; `StaleWriter` if it expired or was taken over."""
        return self.backend.renew(lease, ttl)

    def release(self, lease: Lease) -> None:
        """Give the lease up."""
        self.backend.release(lease)

    @contextmanager
    def lease(self, twin_id: str, holder: str, ttl: float = 30.0) -> Iterator[Lease]:
        """Hold the twin's lease for the duration of a ``with`` block."""
        held = self.acquire(twin_id, holder, ttl)
        try:
            yield held
        finally:
            self.release(held)

    def write(
        self,
        lease: Lease,
        state: TwinState,
        *,
        policy: IdentityPolicy = DEFAULT_POLICY,
        notes: Sequence[Mapping[str, Any]] = (),
    ) -> Snapshot:
        """Store ``state`` as the twin's next snapshot, at the current schema."""
        return self._write(lease, state, state_hash(state, policy), notes)

    def _write(
        self,
        lease: Lease,
        state: TwinState,
        identity_hash: str,
        notes: Sequence[Mapping[str, Any]],
    ) -> Snapshot:
        if state.twin_id != lease.twin_id:
            raise InputError(
                f"twin_id: the state is of twin {state.twin_id!r} but the lease is for "
                f"{lease.twin_id!r}"
            )
        record = self.backend.append(
            lease,
            body=dump_state(state),
            state_hash=identity_hash,
            schema=CURRENT_SCHEMA,
            notes=notes,
        )
        snapshot = Snapshot(record)
        snapshot.__dict__["state"] = state  # what was written is what loading it gives
        if self.cache:
            self._decoded[lease.twin_id] = snapshot
        return snapshot

    def write_after(
        self,
        holder: str,
        state: TwinState,
        after: int,
        *,
        policy: IdentityPolicy = DEFAULT_POLICY,
        notes: Sequence[Mapping[str, Any]] = (),
        ttl: float = 30.0,
    ) -> Snapshot | None:
        """Store ``state`` as version ``after + 1`` if version ``after`` is the newest (0: the
        twin has none), under the twin's lease taken and given up in the same transaction.

        None when the twin has moved past ``after`` (nothing stored); `WriterConflict` while
        another holder's lease lasts."""
        return self._write_after(holder, state, after, state_hash(state, policy), notes, ttl)

    def _write_after(
        self,
        holder: str,
        state: TwinState,
        after: int,
        identity_hash: str,
        notes: Sequence[Mapping[str, Any]],
        ttl: float,
        view: dict[str, Any] | None = None,
    ) -> Snapshot | None:
        """`write_after` with the state's identity hash (and full view) already computed."""
        record = self.backend.append_after(
            state.twin_id,
            holder,
            after=after,
            body=dump_state(state),
            state_hash=identity_hash,
            schema=CURRENT_SCHEMA,
            notes=notes,
            ttl=ttl,
        )
        if record is None:
            return None
        snapshot = Snapshot(record)
        snapshot.__dict__["state"] = state  # what was written is what loading it gives
        if view is not None:
            snapshot.__dict__["identity"] = view
        if self.cache:
            self._decoded[state.twin_id] = snapshot
        return snapshot

    def known(self, twin_id: str) -> Snapshot | None:
        """The newest snapshot of the twin this store has read or written, without asking the
        database (so possibly no longer the newest); None when it has none or reuse is off."""
        return self._decoded.get(twin_id) if self.cache else None

    def latest(self, twin_id: str) -> Snapshot | None:
        """The twin's newest snapshot, or None (a cold start)."""
        cached = self.known(twin_id)
        newer_than = cached.version if cached is not None else 0
        record = self.backend.latest(twin_id, newer_than)
        if record is None:
            return cached  # versions only grow: nothing newer means the one held is newest
        snapshot = Snapshot(record)
        if self.cache:
            self._decoded[twin_id] = snapshot
        return snapshot

    def history(self, twin_id: str) -> list[Snapshot]:
        """All of the twin's snapshots, oldest first."""
        return [Snapshot(r) for r in self.backend.history(twin_id)]

    def twins(self) -> list[str]:
        """Ids of the twins with snapshots."""
        return self.backend.twins()

    def close(self) -> None:
        """Close the backend."""
        self.backend.close()

    def __enter__(self) -> TwinStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_store(url: str | None = None, *, cache: bool = True) -> TwinStore:
    """Open the twin store at ``url``: ``memory://``, ``sqlite:///PATH``, ``postgresql://...``.

    None means ``IPSE_DATABASE_URL`` when set, else ``ipse.db`` in the ipse home folder.
    Migrations are applied on open. ``cache=False`` decodes every snapshot read.
    """
    return TwinStore(open_backend(url), cache=cache)


def maybe_snapshot(
    store: TwinStore,
    lease: Lease,
    state: TwinState,
    last_hash: str | None,
    *,
    policy: IdentityPolicy = DEFAULT_POLICY,
    notes: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Write ``state`` only if its identity hash differs from ``last_hash``; return the hash.

    A turn that changed nothing identity-relevant (pleasantries, a fact merely used) writes
    nothing. Notes (facts that left the snapshot) force a write so their reason is recorded.
    """
    current = state_hash(state, policy)
    if current != last_hash or notes:
        store._write(lease, state, current, notes)
    return current
