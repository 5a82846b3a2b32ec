"""One twin turn as a single library call: lease, apply, decay, snapshot if identity changed.

`apply_turn` is what ``ipse twin apply``, the MCP server's transition tools and the in-process
adapters call. It holds the twin's lease for the whole step, so the read, the transitions and the
write are one writer's; a bad record raises `InputError` before anything is stored.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ipse.errors import InputError
from ipse.twin._apply import apply_transitions
from ipse.twin._config import TwinConfig
from ipse.twin._decay import NO_DECAY
from ipse.twin._identity import DEFAULT_POLICY, changed_fields, state_hash
from ipse.twin._state import TwinState
from ipse.twin._store import Snapshot, TwinStore, maybe_snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """What a turn did: the state it left, whether a snapshot was written, the facts that left."""

    twin_id: str
    transitions: int
    state: TwinState
    written: Snapshot | None
    previous: Snapshot | None
    state_hash: str
    evicted: tuple[dict[str, Any], ...]
    ignored: tuple[str, ...] = ()  # fields that changed but are not identity fields (not stored)

    @property
    def version(self) -> int | None:
        """The version now current (the new one when written)."""
        current = self.written or self.previous
        return current.version if current else None

    def to_json(self) -> dict[str, Any]:
        return {
            "twin_id": self.twin_id,
            "transitions": self.transitions,
            "written": self.written is not None,
            "version": self.version,
            "state_hash": self.state_hash,
            "evicted": list(self.evicted),
            "ignored_fields": list(self.ignored),
        }


def default_holder() -> str:
    """A writer name that tells who holds the lease: ``host:pid``, with ``:thread`` in a
    thread other than the main one. A store hands a lease again to the name that holds it,
    with a new token, so two threads under one name would fence each other ("taken over")
    although nobody else wrote; under their own names the second meets `WriterConflict`,
    which says who is writing."""
    import threading

    name = f"{socket.gethostname()}:{os.getpid()}"
    if threading.current_thread() is not threading.main_thread():
        name += f":{threading.get_ident()}"
    return name


def init_twin(
    store: TwinStore,
    twin_id: str,
    *,
    account: str = "",
    config: TwinConfig | None = None,
    holder: str | None = None,
    ttl: float = 30.0,
) -> Snapshot:
    """Write a twin's first snapshot (a cold start, optionally with its counterparty).

    `InputError` when the twin already has snapshots: its history is never restarted."""
    identity = config.identity if config else DEFAULT_POLICY
    with store.lease(twin_id, holder or default_holder(), ttl) as lease:
        latest = store.latest(twin_id)
        if latest is not None:
            raise InputError(
                f"twin {twin_id!r} already exists (v{latest.version}); nothing written"
            )
        maybe_snapshot(store, lease, TwinState.new(twin_id, account), None, policy=identity)
        first = store.latest(twin_id)
    assert first is not None  # written under the lease just now
    return first


def apply_turn(
    store: TwinStore,
    twin_id: str,
    records: Iterable[Any],
    *,
    config: TwinConfig | None = None,
    holder: str | None = None,
    ttl: float = 30.0,
) -> Turn:
    """Apply ``{"op": ...}`` records to the latest state under the lease; store if changed."""
    batch = list(records)
    identity = config.identity if config else DEFAULT_POLICY
    decay_policy = config.decay if config else NO_DECAY
    with store.lease(twin_id, holder or default_holder(), ttl) as lease:
        latest = store.latest(twin_id)
        state = latest.state if latest else TwinState.new(twin_id)
        applied = apply_transitions(state, batch, policy=decay_policy)
        before = state_hash(state, identity) if latest else None
        after = maybe_snapshot(
            store, lease, applied.state, before, policy=identity, notes=applied.notes
        )
        written = store.latest(twin_id) if after != before or applied.notes else None
    changed = changed_fields(state, applied.state)
    return Turn(
        twin_id=twin_id,
        transitions=len(batch),
        state=applied.state,
        written=written,
        previous=latest,
        state_hash=after,
        evicted=tuple(applied.notes),
        ignored=() if written else tuple(n for n in changed if n not in identity.fields),
    )


__all__ = ["Turn", "apply_turn", "default_holder", "init_twin"]
