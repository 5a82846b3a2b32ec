"""``ipse proxy --workers N``: forked workers on one socket and one store, supervised.

Real processes on loopback, against the scripted upstream and conversations of the replicas'
tests (`tests.support.replicas`). Which worker takes a connection is the kernel's choice; to
make a conversation's requests alternate between the two workers, the test pauses one of them
(SIGSTOP) while the other takes a turn, and the health endpoint, answered by the worker that
runs, names it and counts its requests. Then:

- every request reached the upstream rewritten to the very bytes a single-process proxy sent
  for it, on SQLite and on PostgreSQL, and the store counted every request once;
- a worker SIGKILLed mid-run is replaced, the clients retry what it cut, and every answered
  request is counted;
- ``ipse proxy stop`` leaves no process behind, and workers whose supervisor is SIGKILLed stop
  by themselves;
- ``--record`` lines written by both workers at once, each larger than a pipe's buffer, are
  whole, and each exchange is there once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from ipse.store import open_conversations
from tests.support import replicas as rp
from tests.support.anthropic_upstream import Upstream, anthropic_upstream

WORKERS = ["--workers", "2"]
CONVERSATIONS = 6  # for the alternating turns
TURNS = 4
LOAD = 30  # conversations at once for the kill


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'workers.db'}"
    return str(request.getfixturevalue("pg_url"))


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return sorted(found)


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie nobody has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def _until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def _health(url: str) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(f"{url}/ipse/health", timeout=10).json()
    return document


@contextlib.contextmanager
def _paused(pids: list[int]) -> Iterator[None]:
    """Stop ``pids`` (SIGSTOP) for the block, then let them all go on at once."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def _only(running: int, workers: list[int]) -> contextlib.AbstractContextManager[None]:
    """Pause every worker but ``running`` for the block: it takes every connection."""
    return _paused([pid for pid in workers if pid != running])


def _workers(proxy: rp.Replica, count: int = 2) -> list[int]:
    """The proxy's workers, once ``count`` of them answer (each checked alone)."""
    _until(lambda: len(_children(proxy.process.pid)) == count)
    workers = _children(proxy.process.pid)
    for pid in workers:
        with _only(pid, workers):
            health = _health(proxy.url)
        assert health["worker"] == pid and health["pid"] == proxy.process.pid
        assert health["workers"] == count
    return workers


def _baseline(upstream: Upstream, folder: Path, conversations: int) -> dict[str, list[bytes]]:
    """The bodies a single-process proxy sends upstream for the conversations' requests."""
    single = f"sqlite:///{folder / 'single.db'}"
    with rp.replicas(1, upstream.url, single, folder) as (only,):
        outcome = rp.drive(only.url, conversations, TURNS, retries=0, timeout=120)
    assert outcome.exact == conversations * TURNS
    baseline = rp.received(upstream)
    upstream.received.clear()
    return baseline


def _counted(store: str, conversations: int) -> dict[int, Any]:
    conversations_store = open_conversations(store)
    try:
        return {
            c: conversations_store.get(f"session:{rp.session(c)}") for c in range(conversations)
        }
    finally:
        conversations_store.close()


def _turn_of(marker: str) -> tuple[int, int]:
    conversation, turn = marker[1:].split("-t")
    return int(conversation), int(turn)


def test_turns_alternate_between_workers_with_identical_rewrites(
    store: str, tmp_path: Path
) -> None:
    with anthropic_upstream(answer=rp.answer) as upstream:
        baseline = _baseline(upstream, tmp_path, CONVERSATIONS)
        with rp.replicas(1, upstream.url, store, tmp_path, options=WORKERS) as (proxy,):
            workers = _workers(proxy)
            served = dict.fromkeys(workers, 0)
            for turn in range(TURNS):
                worker = workers[turn % 2]
                with _only(worker, workers):
                    outcome = rp.drive(proxy.url, CONVERSATIONS, turn + 1, retries=0, first=turn)
                    health = _health(proxy.url)
                served[worker] += CONVERSATIONS
                assert outcome.exact == CONVERSATIONS and not outcome.wrong
                assert health["worker"] == worker and health["requests"] == served[worker]
        spread = rp.received(upstream)
    # each request once, rewritten to the single process's bytes whichever worker took it
    assert spread == baseline
    handed_off = [m for m, raws in spread.items() if raws != [rp.body(*_turn_of(m))]]
    assert len(handed_off) == CONVERSATIONS * (TURNS - rp.CHECKPOINT_TURN)
    for state in _counted(store, CONVERSATIONS).values():
        assert state is not None and state.requests == TURNS
        assert state.handoffs == 1  # one checkpoint: one handoff, whichever worker made it


@dataclass
class _Worker:
    pid: int

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)


def test_a_killed_worker_is_replaced_and_nothing_answered_is_lost(
    store: str, tmp_path: Path
) -> None:
    total = LOAD * TURNS
    seen: list[int] = []

    def a_third_sent() -> bool:
        seen.append(len(upstream.received))
        return seen[-1] >= total // 3

    with (
        anthropic_upstream(answer=rp.answer) as upstream,
        rp.replicas(1, upstream.url, store, tmp_path, options=WORKERS) as (proxy,),
    ):
        before = _workers(proxy)
        with rp.kill_when(a_third_sent, _Worker(before[1])) as killed:
            outcome = rp.drive(proxy.url, LOAD, TURNS, retries=3, timeout=180)
        after = _workers(proxy)  # the replacement answers too
        supervisor = proxy.process.poll()
        sent = len(upstream.received)
    log = proxy.log.read_text()
    assert len(killed) == 1 and sent > seen[-1], "the kill did not happen mid-run"
    assert supervisor is None
    assert before[0] in after and before[1] not in after and len(after) == 2
    assert f"worker {before[1]} killed by SIGKILL; started worker" in log
    # every client got exactly its own bytes (a stream the kill cut: its start, then retried)
    assert outcome.wrong == [] and outcome.failed == [] and outcome.cut_prefixes_own
    assert outcome.exact == total, outcome
    # nothing answered is lost, nothing sent again counted twice: every conversation counts
    # each of its requests once, whichever worker counted it and however often it was retried
    for state in _counted(store, LOAD).values():
        assert state is not None
        assert state.requests == TURNS and state.handoffs == 1


def _ipse(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "IPSE_HOME": str(home)},
    )


def test_stop_leaves_no_process_behind(tmp_path: Path) -> None:
    port = str(rp.free_port())
    options = ("--port", port, "--anthropic-upstream", "http://127.0.0.1:9")
    first = _ipse(tmp_path, "proxy", "start", *options, "--workers", "2", "--json")
    assert first.returncode == 0, first.stderr
    started = json.loads(first.stdout)
    supervisor = started["pid"]
    try:
        _until(lambda: len(_children(supervisor)) == 2)
        workers = _children(supervisor)
        health = _health(started["url"])
        assert health["pid"] == supervisor and health["worker"] in workers
        for more in (("--workers", "2"), ()):  # as started, or saying nothing of workers
            again = _ipse(tmp_path, "proxy", "start", *options, *more, "--json")
            assert again.returncode == 0 and json.loads(again.stdout)["started"] is False
        other = _ipse(tmp_path, "proxy", "start", *options, "--workers", "3")
        assert other.returncode == 2 and "2 workers" in other.stderr, other.stderr
        status = _ipse(tmp_path, "proxy", "status", "--port", port)
        assert status.returncode == 0 and f"pid {supervisor}" in status.stdout
    finally:
        stopped = _ipse(tmp_path, "proxy", "stop", "--port", port)
    assert stopped.returncode == 0 and f"stopped (pid {supervisor})" in stopped.stdout
    assert all(not Path(f"/proc/{pid}").exists() for pid in workers)  # reaped by the supervisor
    assert _gone(supervisor)


def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    port = rp.free_port()
    command = [sys.executable, "-m", "ipse", "proxy", "--port", str(port), "--workers", "2",
               "--anthropic-upstream", "http://127.0.0.1:9"]  # fmt: skip
    env = {**os.environ, "IPSE_HOME": str(tmp_path)}
    with subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL) as supervisor:
        try:
            _until(lambda: len(_children(supervisor.pid)) == 2)
            workers = _children(supervisor.pid)
            _health(f"http://127.0.0.1:{port}")
            supervisor.kill()
            supervisor.wait(timeout=10)
            _until(lambda: all(_gone(pid) for pid in workers), timeout=15)
        finally:
            supervisor.kill()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/ipse/health", timeout=2)


def _large(n: int) -> bytes:
    """A request of about 1 MB (a record line far beyond a pipe's buffer), named ``n``."""
    document = {
        "model": rp.MODEL,
        "max_tokens": 64,
        "stream": True,
        "metadata": {"user_id": f"large-{n}"},
        "messages": [{"role": "user", "content": f"{n} " + "lorem ipsum " * 90000}],
    }
    return orjson.dumps(document)


def _post_all(url: str, numbers: range) -> list[int]:
    async def run() -> list[int]:
        async with httpx.AsyncClient(timeout=120) as client:
            headers = {"x-api-key": "sk-workers", "anthropic-version": "2023-06-01"}

            async def one(n: int) -> int:
                answer = await client.post(f"{url}/v1/messages", content=_large(n), headers=headers)
                return answer.status_code

            return list(await asyncio.gather(*(one(n) for n in numbers)))

    return asyncio.run(run())


def test_record_lines_from_both_workers_are_whole_and_once(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    half = 20
    store = f"sqlite:///{tmp_path / 'workers.db'}"
    options = [*WORKERS, "--record", str(record)]
    with (
        anthropic_upstream(answer=rp.answer) as upstream,
        rp.replicas(1, upstream.url, store, tmp_path, options=options) as (proxy,),
        ThreadPoolExecutor(2) as pool,
    ):
        first, second = _workers(proxy)
        # each worker takes half the requests; both finish their streams, and record them, at once
        with _only(first, [first, second]):
            ones = pool.submit(_post_all, proxy.url, range(half))
            _until(lambda: len(upstream.received) == half)
        with _only(second, [first, second]):
            twos = pool.submit(_post_all, proxy.url, range(half, 2 * half))
            _until(lambda: len(upstream.received) == 2 * half)
        with _paused([first, second]):
            time.sleep(1.0)  # the upstream sends every stream's end meanwhile: both book at once
        statuses = ones.result(timeout=120) + twos.result(timeout=120)
        for pid, count in ((first, half), (second, half)):
            with _only(pid, [first, second]):
                assert _health(proxy.url)["requests"] == count
    assert statuses == [200] * (2 * half)
    lines = record.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(len(line) > 1_000_000 for line in lines[:-1])
    entries = [json.loads(line) for line in lines[:-1]]  # each line a whole document
    bodies = [e["request"]["body"] for e in entries]
    named = sorted(
        (json.loads(b) if isinstance(b, str) else b)["metadata"]["user_id"] for b in bodies
    )
    assert named == sorted(f"large-{n}" for n in range(2 * half))


def test_workers_are_counted_from_one() -> None:
    from ipse.errors import UsageError
    from ipse.proxy import ProxyConfig, start_in_thread

    with pytest.raises(UsageError, match="--workers"):
        ProxyConfig(workers=0)
    with pytest.raises(UsageError, match="one worker"):
        start_in_thread(ProxyConfig(port=0, workers=2))
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "proxy", "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--workers" in done.stderr


def test_workers_that_keep_dying_at_start_stop_the_proxy(tmp_path: Path) -> None:
    from ipse.proxy._workers import GIVE_UP

    port = rp.free_port()
    command = [sys.executable, "-m", "ipse", "proxy", "--port", str(port), "--workers", "2",
               "--anthropic-upstream", "http://127.0.0.1:9"]  # fmt: skip
    env = {**os.environ, "IPSE_HOME": str(tmp_path)}
    killed: set[int] = set()
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as supervisor:
        try:
            deadline = time.monotonic() + 60
            while supervisor.poll() is None and time.monotonic() < deadline:
                for pid in set(_children(supervisor.pid)) - killed:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                time.sleep(0.02)
            code = supervisor.wait(timeout=60)
        finally:
            supervisor.kill()
        assert supervisor.stderr is not None
        log = supervisor.stderr.read()
    assert code == 1, log
    assert f"{GIVE_UP} workers in a row died within" in log
    assert "did not stop" not in log  # every worker reaped, none waited for twice
    assert GIVE_UP <= len(killed) <= GIVE_UP + 2
    assert all(_gone(pid) for pid in killed)
