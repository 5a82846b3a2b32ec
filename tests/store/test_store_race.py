"""Several real processes racing for one twin, on SQLite and on PostgreSQL.

Exactly one lease holder at a time; a taken-over writer is fenced; no lost or interleaved
history; concurrent opens migrate once.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import defaultdict
from collections.abc import Sequence

import pytest
import race_worker

from ipse.twin import open_store

CTX = multiprocessing.get_context("spawn")
pytestmark = pytest.mark.parametrize("durable_url", ["sqlite", "postgres"], indirect=True)


def _run(procs: Sequence[multiprocessing.process.BaseProcess]) -> None:
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"


def test_racing_turns_each_build_on_the_one_before(durable_url: str) -> None:
    """Processes applying turns to one twin at once: every turn is stored exactly once, on top
    of the snapshot before it (a turn that lost the race is applied again to the newer one)."""
    racers, turns = 4, 6
    procs = [
        CTX.Process(target=race_worker.turner, args=(durable_url, "twin-t", f"w{n}", turns))
        for n in range(racers)
    ]
    _run(procs)
    with open_store(durable_url) as store:
        history = store.history("twin-t")
    assert [s.version for s in history] == list(range(1, racers * turns + 1))
    for before, after in itertools.pairwise(history):
        assert after.state.commitments[:-1] == before.state.commitments
    assert sorted(history[-1].state.commitments) == sorted(
        f"w{n}/{t}" for n in range(racers) for t in range(turns)
    )
    tokens = [s.record.token for s in history]
    assert tokens == sorted(set(tokens))  # a new lease for every write


def test_racing_writers_one_holder_no_lost_or_interleaved_history(durable_url: str) -> None:
    racers, rounds, writes = 4, 3, 3
    holders = CTX.Value("i", 0)
    violations = CTX.Value("i", 0)
    lock = CTX.Lock()
    procs = [
        CTX.Process(
            target=race_worker.racer,
            args=(durable_url, "twin-r", f"w{n}", rounds, writes, (holders, violations, lock)),
        )
        for n in range(racers)
    ]
    _run(procs)
    assert violations.value == 0
    with open_store(durable_url) as store:
        history = store.history("twin-r")
    total = racers * rounds * writes
    assert [s.version for s in history] == list(range(1, total + 1))
    # tokens never go backwards, and each token's snapshots are one holder's contiguous block
    tokens = [s.record.token for s in history]
    assert tokens == sorted(tokens)
    blocks: dict[int, list[str]] = defaultdict(list)
    for s in history:
        blocks[s.record.token].append(s.record.writer)
    assert all(len(set(w)) == 1 and len(w) == writes for w in blocks.values())
    # every snapshot builds on the one before it: nothing lost
    for before, after in itertools.pairwise(history):
        assert after.state.commitments[: len(before.state.commitments)] == (
            before.state.commitments
        )
    final = history[-1].state.commitments
    assert len(final) == total == len(set(final))
    per_writer = defaultdict(list)
    for text in final:
        writer, _, rest = text.partition("/")
        per_writer[writer].append(rest)
    for items in per_writer.values():
        assert items == [f"{r}/{i}" for r in range(rounds) for i in range(writes)]


def test_taken_over_writer_is_fenced_across_processes(durable_url: str) -> None:
    has_lease, wrote = CTX.Event(), CTX.Event()
    out = CTX.Queue()
    slow = CTX.Process(
        target=race_worker.slow_writer, args=(durable_url, "twin-f", has_lease, wrote, out)
    )
    take = CTX.Process(
        target=race_worker.taker, args=(durable_url, "twin-f", has_lease, wrote, out)
    )
    _run([slow, take])
    results = [out.get(timeout=10), out.get(timeout=10)]
    assert "stale" in results
    taker_result = next(r for r in results if isinstance(r, tuple))
    assert taker_result[1] == 2
    with open_store(durable_url) as store:
        history = store.history("twin-f")
    assert [(s.record.writer, s.state.commitments) for s in history] == [
        ("taker", ("from the taker",))
    ]


def test_simultaneous_acquire_has_exactly_one_winner(durable_url: str) -> None:
    n = 6
    barrier = CTX.Barrier(n)
    out = CTX.Queue()
    procs = [
        CTX.Process(target=race_worker.grab, args=(durable_url, "twin-g", f"g{i}", barrier, out))
        for i in range(n)
    ]
    _run(procs)
    results = [out.get(timeout=10) for _ in range(n)]
    winners = [r for r in results if r[0] == "won"]
    assert len(winners) == 1
    assert winners[0][2] == 1


def test_simultaneous_open_migrates_once(durable_url: str) -> None:
    n = 4
    barrier = CTX.Barrier(n)
    out = CTX.Queue()
    procs = [
        CTX.Process(target=race_worker.opener, args=(durable_url, barrier, out)) for _ in range(n)
    ]
    _run(procs)
    results = [out.get(timeout=10) for _ in range(n)]
    assert all(r == results[0] for r in results)
    assert [step for _, step, _ in results[0]] == [1, 2]
