"""A lease holder frozen inside its critical section must not block the others for ever.

A real process takes the lease, enters the backend's critical section (SQLite's writer lock;
on PostgreSQL renew's ``SELECT ... FOR UPDATE`` of the lease row) and stops itself with
SIGSTOP. Another process must then get `WriterConflict` within a bound tied to the lease (the
assertion is generous: three times the lease), and a reader must not wait for the writer.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest
import race_worker

from ipse.store import open_backend

CTX = multiprocessing.get_context("spawn")
TTL = 2.0
pytestmark = pytest.mark.parametrize("durable_url", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def frozen(durable_url: str) -> Iterator[str]:
    """A holder frozen (SIGSTOP) inside its critical section; killed afterwards."""
    open_backend(durable_url).close()  # the schema exists before the holder freezes
    ready = CTX.Event()
    holder = CTX.Process(target=race_worker.frozen_holder, args=(durable_url, "twin-z", TTL, ready))
    holder.start()
    try:
        assert ready.wait(60), "the holder never reached its critical section"
        yield durable_url
    finally:
        assert holder.pid is not None
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(30)


def _outcome(target: Any, args: tuple[Any, ...]) -> Any:
    out = CTX.Queue()
    proc = CTX.Process(target=target, args=(*args, out))
    proc.start()
    proc.join(10 * TTL + 30)  # a process still waiting here is the bug: it would wait for ever
    alive = proc.is_alive()
    if alive:
        proc.kill()
        proc.join(10)
    assert not alive, "still waiting for the frozen holder"
    assert proc.exitcode == 0
    return out.get(timeout=10)


def test_a_writer_waiting_on_a_frozen_holder_gets_writer_conflict(frozen: str) -> None:
    outcome, waited = _outcome(race_worker.waiting_writer, (frozen, "twin-z", TTL))
    assert outcome.startswith("conflict:"), outcome
    assert waited < 3 * TTL + 10, waited  # generous: bounded by the lease, not by the holder


def test_a_reader_does_not_wait_for_a_frozen_writer(frozen: str) -> None:
    none_yet, waited = _outcome(race_worker.reader, (frozen, "twin-z"))
    assert none_yet is True
    assert waited < 3 * TTL + 10, waited
