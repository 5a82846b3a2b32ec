"""The storage protocol every backend implements, and the records it trades in.

A backend knows nothing about twin state types: it stores opaque JSON bodies with their
identity hash and schema version, as an append-only history per twin, and it enforces one
writer per twin with leases whose fencing token grows with every new lease. The twin layer
(`ipse.twin`) turns states into bodies and back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ipse import jsonio
from ipse.errors import StoreError

JSONDict = dict[str, Any]


@dataclass(frozen=True)
class Lease:
    """The right to write one twin, until ``expires_at`` (seconds since the epoch).

    ``token`` is the fencing token: every new lease of a twin gets a larger one, and a write
    carrying a token older than the current lease's is refused.
    """

    twin_id: str
    holder: str
    token: int
    expires_at: float


@dataclass(frozen=True, kw_only=True)
class SnapshotRecord:
    """One stored snapshot, exactly as written (reading never rewrites it)."""

    twin_id: str
    version: int
    state_hash: str
    schema: int
    body: JSONDict
    created_at: float
    writer: str
    token: int
    notes: tuple[JSONDict, ...] = field(default=())

    def to_json(self) -> JSONDict:
        """A JSON-ready dict of the record (body included)."""
        return {
            "twin_id": self.twin_id,
            "version": self.version,
            "state_hash": self.state_hash,
            "schema": self.schema,
            "created_at": self.created_at,
            "writer": self.writer,
            "token": self.token,
            "notes": list(self.notes),
            "body": self.body,
        }


@runtime_checkable
class SnapshotBackend(Protocol):
    """What a storage backend offers: leases with fencing, and append-only snapshot history."""

    url: str

    def acquire(self, twin_id: str, holder: str, ttl: float) -> Lease:
        """Take the lease of ``twin_id`` for ``ttl`` seconds; `WriterConflict` if held."""
        ...

    def renew(self, lease: Lease, ttl: float) -> Lease:
        """Extend a still-current lease (same token); `StaleWriter` if it expired or was taken."""
        ...

    def release(self, lease: Lease) -> None:
        """Give a lease up early; a no-op if it is no longer current."""
        ...

    def append(
        self,
        lease: Lease,
        *,
        body: Mapping[str, Any],
        state_hash: str,
        schema: int,
        notes: Sequence[Mapping[str, Any]] = (),
    ) -> SnapshotRecord:
        """Store the next version; `StaleWriter` (nothing stored) unless ``lease`` is current."""
        ...

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
        """Take the lease, store version ``after + 1`` if the newest version is ``after`` (0: no
        snapshot yet), and give the lease up, as one transaction.

        The record, or None when the twin has moved past ``after`` (nothing stored: read the
        newest and try again); `WriterConflict` while another holder's lease lasts. Like
        `acquire`, it fences every older lease of the twin. Waits are bounded by ``ttl``."""
        ...

    def latest(self, twin_id: str, newer_than: int = 0) -> SnapshotRecord | None:
        """The newest snapshot of a twin, or None; None too when its version is not above
        ``newer_than`` (a reader that holds version ``newer_than`` asks only for what is new)."""
        ...

    def latest_version(self, twin_id: str) -> int | None:
        """The newest snapshot's version (a cheap check before reusing a decoded one)."""
        ...

    def history(self, twin_id: str) -> list[SnapshotRecord]:
        """Every snapshot of a twin, oldest first."""
        ...

    def twins(self) -> list[str]:
        """Ids of every twin with at least one snapshot, sorted."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def check_ttl(ttl: float) -> float:
    """Validate a lease duration in seconds."""
    from ipse.errors import InputError

    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise InputError(f"ttl: must be a positive number of seconds, got {ttl!r}")
    return float(ttl)


def check_twin_id(twin_id: str) -> str:
    """Validate a twin id: a non-empty string without control characters."""
    from ipse.errors import InputError

    if not isinstance(twin_id, str) or not twin_id or any(ord(c) < 32 for c in twin_id):
        raise InputError(f"twin_id: must be a non-empty printable string, got {twin_id!r}")
    return twin_id


def record_from_row(row: Sequence[Any]) -> SnapshotRecord:
    """A snapshot row (twin_id, version, state_hash, schema, body, created_at, writer, token,
    notes) as a record; bodies and notes are stored as JSON text."""
    twin_id, version, state_hash, schema, body, created_at, writer, token, notes = row
    try:
        body_value = jsonio.loads(body)
        notes_value = jsonio.loads(notes)
    except jsonio.JSONDecodeError as exc:
        raise StoreError(f"twin {twin_id!r} version {version}: stored JSON is corrupt") from exc
    return SnapshotRecord(
        twin_id=str(twin_id),
        version=int(version),
        state_hash=str(state_hash),
        schema=int(schema),
        body=body_value,
        created_at=float(created_at),
        writer=str(writer),
        token=int(token),
        notes=tuple(notes_value),
    )
