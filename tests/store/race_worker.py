"""Worker functions for the racing-writers tests, run in separate processes (spawn).

Each worker opens its own store connection, as a separate machine would.
"""

from __future__ import annotations

import random
import time
from typing import Any

from ipse.errors import StaleWriter, WriterConflict


def racer(url: str, twin_id: str, holder: str, rounds: int, writes: int, shared: Any) -> None:
    """Take the lease ``rounds`` times; each time append ``writes`` snapshots built on latest."""
    from ipse.twin import TwinState, open_store
    from ipse.twin._transitions import make_commitment

    holders, violations, lock = shared
    rng = random.Random(holder)
    store = open_store(url)
    done = 0
    while done < rounds:
        try:
            lease = store.acquire(twin_id, holder, ttl=60)
        except WriterConflict:
            time.sleep(rng.uniform(0.001, 0.01))
            continue
        with lock:
            holders.value += 1
            if holders.value != 1:
                violations.value += 1
        latest = store.latest(twin_id)
        state = latest.state if latest else TwinState.new(twin_id, "race")
        for i in range(writes):
            state = make_commitment(state, f"{holder}/{done}/{i}")
            store.write(lease, state)
        with lock:
            holders.value -= 1
        store.release(lease)
        done += 1
    store.close()


def slow_writer(url: str, twin_id: str, has_lease: Any, other_wrote: Any, out: Any) -> None:
    """Take a short lease, wait until another process took over and wrote, then try to write."""
    from ipse.twin import TwinState, open_store
    from ipse.twin._transitions import make_commitment

    store = open_store(url)
    lease = store.acquire(twin_id, "slow", ttl=0.3)
    has_lease.set()
    other_wrote.wait(30)
    state = make_commitment(TwinState.new(twin_id, "x"), "from the slow writer")
    try:
        store.write(lease, state)
        out.put("written")
    except StaleWriter:
        out.put("stale")
    store.close()


def taker(url: str, twin_id: str, has_lease: Any, wrote: Any, out: Any) -> None:
    """Wait for the slow writer's lease, take over once it expires, write once."""
    from ipse.twin import TwinState, open_store
    from ipse.twin._transitions import make_commitment

    store = open_store(url)
    has_lease.wait(30)
    conflicts = 0
    while True:
        try:
            lease = store.acquire(twin_id, "taker", ttl=60)
            break
        except WriterConflict:
            conflicts += 1
            time.sleep(0.02)
    store.write(lease, make_commitment(TwinState.new(twin_id, "x"), "from the taker"))
    out.put(("taker", lease.token, conflicts))
    wrote.set()
    store.close()


def grab(url: str, twin_id: str, holder: str, barrier: Any, out: Any) -> None:
    """Try once, at the same moment as the others, to take a fresh twin's lease."""
    from ipse.store import open_backend

    backend = open_backend(url)
    barrier.wait(30)
    try:
        lease = backend.acquire(twin_id, holder, ttl=60)
        out.put(("won", holder, lease.token))
    except WriterConflict:
        out.put(("lost", holder, 0))
    backend.close()


def opener(url: str, barrier: Any, out: Any) -> None:
    """Open (and so migrate) the same fresh database at the same moment as the others."""
    from ipse.store import open_backend

    barrier.wait(30)
    backend = open_backend(url)
    out.put(backend.applied_migrations())  # type: ignore[attr-defined]
    backend.close()


def frozen_holder(url: str, twin_id: str, ttl: float, ready: Any) -> None:
    """Take the lease, enter the backend's critical section (SQLite: the writer lock; PostgreSQL:
    renew's ``SELECT ... FOR UPDATE`` of the lease row), and freeze there with SIGSTOP."""
    import os
    import signal

    from ipse.store import open_backend

    backend: Any = open_backend(url)
    lease = backend.acquire(twin_id, "frozen", ttl=ttl)
    section = backend._immediate() if url.startswith("sqlite") else backend._tx()
    with section as cur:
        if not url.startswith("sqlite"):
            backend._lock_current(cur, lease)
        ready.set()
        os.kill(os.getpid(), signal.SIGSTOP)


def waiting_writer(url: str, twin_id: str, ttl: float, out: Any) -> None:
    """Try to take the lease while the holder is frozen; report the outcome and the wait."""
    from ipse.store import open_backend

    started = time.monotonic()
    backend = open_backend(url)
    try:
        backend.acquire(twin_id, "waiting", ttl=ttl)
        outcome = "acquired"
    except WriterConflict as exc:
        outcome = f"conflict: {exc}"
    out.put((outcome, time.monotonic() - started))
    backend.close()


def reader(url: str, twin_id: str, out: Any) -> None:
    """Open the store and read the twin's latest snapshot, as ``ipse twin show`` does."""
    from ipse.store import open_backend

    started = time.monotonic()
    backend = open_backend(url)
    latest = backend.latest(twin_id)
    out.put((latest is None, time.monotonic() - started))
    backend.close()


def turner(url: str, twin_id: str, holder: str, turns: int) -> None:
    """``turns`` calls of `apply_turn`, each adding one commitment of its own."""
    from ipse.twin import apply_turn, open_store

    with open_store(url) as store:
        for n in range(turns):
            apply_turn(
                store, twin_id, [{"op": "make_commitment", "text": f"{holder}/{n}"}], holder=holder
            )
