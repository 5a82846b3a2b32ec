"""One twin turn as a single library call: read, apply, decay, snapshot if identity changed.

`apply_turn` is what ``ipse twin apply``, the MCP server's transition tools and the in-process
adapters call. The read, the transitions and the write are one writer's: the snapshot is stored
only on top of the version the transitions were applied to, under the twin's lease, which the
write takes and gives up in its own transaction (`TwinStore.write_after`); when another writer
stored a version in between, the records are applied again to that one. A store that already
holds the newest snapshot (it read or wrote it) does not read it again, so a turn that changes
the twin is one round trip to the database, and a turn that changes nothing one read. A bad
record raises `InputError` before anything is stored.

A write whose connection failed (`ConnectionLost`: the server terminated the session, or
restarted) may have committed before its reply was lost. The turn then reads the newest
snapshot back (again while the connection keeps failing, until the turn's deadline): the very
snapshot it wrote (the next version, by this writer, with this body) is its result; otherwise
the records are applied again, as after a lost race. So a turn is stored exactly once, whether
the failure came before the commit or after it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.errors import ConnectionLost, InputError, WriterConflict
from ipse.twin._apply import apply_transitions
from ipse.twin._config import TwinConfig
from ipse.twin._decay import NO_DECAY
from ipse.twin._identity import DEFAULT_POLICY, changed_in, identity_view, view_hash
from ipse.twin._schema import dump_state
from ipse.twin._state import TwinState
from ipse.twin._store import Snapshot, TwinStore


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
    state = TwinState.new(twin_id, account)
    who = holder or default_holder()
    deadline = time.monotonic() + ttl
    while True:
        try:
            first = store.write_after(who, state, 0, policy=identity, ttl=ttl)
        except ConnectionLost as lost:
            landed = _read_back(store, twin_id, deadline, lost)
            if landed is None and time.monotonic() < deadline:
                continue  # not stored: write it again
            if landed is None:
                raise
            first = landed if _is_ours(landed, who, 0, state) else None
        break
    if first is None:
        latest = store.latest(twin_id)
        raise InputError(
            f"twin {twin_id!r} already exists (v{latest.version if latest else '?'}); "
            "nothing written"
        )
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
    """Apply ``{"op": ...}`` records to the latest state; store the result if it changed.

    The result is stored only on top of the version it was computed from, under the twin's
    lease (taken and given up in the write's own transaction): when another writer stored a
    version first, the records are applied again to that one. `WriterConflict` while another
    holder's lease lasts, or when the twin kept moving for ``ttl`` seconds."""
    batch = list(records)
    who = holder or default_holder()
    deadline = time.monotonic() + ttl
    latest = store.known(twin_id) or _read_back(store, twin_id, deadline)
    while True:
        turn = _try_turn(
            store, twin_id, batch, latest, config=config, holder=who, ttl=ttl, deadline=deadline
        )
        if isinstance(turn, Turn):
            return turn
        if time.monotonic() > deadline:
            raise WriterConflict(
                f"twin {twin_id!r} kept being written by others for {ttl:.0f} s; try again"
            )
        latest = turn


def _try_turn(
    store: TwinStore,
    twin_id: str,
    batch: list[Any],
    latest: Snapshot | None,
    *,
    config: TwinConfig | None,
    holder: str,
    ttl: float,
    deadline: float,
) -> Turn | Snapshot | None:
    """The turn applied on top of ``latest``, or the newest snapshot when ``latest`` is not
    it any more (nothing stored by this try)."""
    identity = config.identity if config else DEFAULT_POLICY
    state = latest.state if latest else TwinState.new(twin_id)
    applied = apply_transitions(state, batch, policy=config.decay if config else NO_DECAY)
    old_view = latest.identity if latest else identity_view(state)  # every field
    new_view = identity_view(applied.state)
    before = view_hash(old_view, identity) if latest else None
    after = view_hash(new_view, identity)
    base = latest.version if latest else 0
    written: Snapshot | None = None
    notes = applied.notes
    if after != before or notes:
        try:
            written = store._write_after(holder, applied.state, base, after, notes, ttl, new_view)
        except ConnectionLost as lost:
            landed = _read_back(store, twin_id, deadline, lost)
            if _is_ours(landed, holder, base, applied.state):
                written = landed
            elif time.monotonic() > deadline:
                raise
            else:
                return landed  # not stored: applied again on top of the newest
        if written is None:
            return _read_back(store, twin_id, deadline)
    else:
        newest = _read_back(store, twin_id, deadline)  # nothing to write: is nothing newer?
        if (newest.version if newest else 0) != base:
            return newest
    changed = () if written else changed_in(old_view, new_view)
    return Turn(
        twin_id=twin_id,
        transitions=len(batch),
        state=applied.state,
        written=written,
        previous=latest,
        state_hash=after,
        evicted=tuple(notes),
        ignored=() if written else tuple(n for n in changed if n not in identity.fields),
    )


def _read_back(
    store: TwinStore, twin_id: str, deadline: float, lost: ConnectionLost | None = None
) -> Snapshot | None:
    """The twin's newest snapshot, asked again while the connection keeps failing (a server
    that terminated a session answers the next one), until ``deadline``. After a ``lost``
    write, the error at the deadline says the turn may have been stored."""
    pause = 0.05
    while True:
        try:
            return store.latest(twin_id)
        except ConnectionLost as exc:
            if time.monotonic() + pause > deadline:
                if lost is None:
                    raise
                raise ConnectionLost(
                    f"{lost}; the turn may have been stored (the database did not answer "
                    f"again): `ipse twin show {twin_id}` says whether"
                ) from exc
            time.sleep(pause)
            pause = min(2 * pause, 1.0)


def _is_ours(snapshot: Snapshot | None, holder: str, base: int, state: TwinState) -> bool:
    """Whether ``snapshot`` is the write of ``state`` on top of version ``base`` by ``holder``
    (a write whose reply was lost): one holder writes one turn at a time, and the body holds
    the turn's own times."""
    if snapshot is None or snapshot.version != base + 1 or snapshot.record.writer != holder:
        return False
    return bool(snapshot.record.body == jsonio.loads(jsonio.dumps(dump_state(state))))


__all__ = ["Turn", "apply_turn", "default_holder", "init_twin"]
