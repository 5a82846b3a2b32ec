"""The archive replicas share on PostgreSQL holds each removed block once, whatever the races.

Proxy replicas each archive what a handoff removed the first time they rewrite a checkpoint, and
a client retries a request a killed replica never answered: the same items arrive many times, at
once, from many connections, and different conversations share payloads (the same ``make``
output) in different orders. Inserts are content addressed and idempotent: no error, no
deadlock, every blob and every (session, item) row once, each counted as new exactly once.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

import psycopg

from ipse.archive import open_archive

THREADS = 8
ROUNDS = 12  # puts per thread


@dataclass(frozen=True)
class _Item:
    kind: str
    id: str
    tool: str
    call: dict[str, Any] | None
    result: dict[str, Any] | None
    message: int


def _items(session: int) -> list[_Item]:
    """Six tool calls whose results are shared payloads (the same output in every session)."""
    return [
        _Item(
            kind="tool",
            id=f"toolu_{n}",
            tool="Bash",
            call={"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"c": n}},
            result={"type": "tool_result", "content": f"shared output {n} " * 50},
            message=2 * n + 1,
        )
        for n in range(6)
    ]


def test_concurrent_puts_store_each_block_once(pg_url: str) -> None:
    sessions = [f"session:{s}" for s in range(3)]
    open_archive(pg_url).close()  # the tables exist before the race starts
    start = threading.Barrier(THREADS, timeout=30)
    added: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        archive = open_archive(pg_url)
        try:
            start.wait()
            for _ in range(ROUNDS):
                session = rng.choice(sessions)
                items = _items(sessions.index(session))
                rng.shuffle(items)  # another order each time: the shared blobs cross
                count = archive.put(session, items, "proxy")
                with lock:
                    added.append(count)
        except BaseException as exc:  # every failure is reported, none hangs the test
            with lock:
                errors.append(exc)
        finally:
            archive.close()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a put never returned"
    assert errors == []
    with psycopg.connect(pg_url, autocommit=True) as pg:
        items = pg.execute(
            "SELECT session, item_id, count(*) FROM archive_items GROUP BY session, item_id"
        ).fetchall()
        blobs = pg.execute("SELECT count(*), count(DISTINCT sha256) FROM archive_blobs").fetchone()
    used = {s for s, _, _ in items}
    assert all(n == 1 for _, _, n in items)
    assert len(items) == 6 * len(used)
    assert sum(added) == len(items)  # each row counted as new by exactly one put
    # six calls differ per item, six results are shared by every session: twelve payloads
    assert blobs == (12, 12)
