"""Proxy replicas behind a real load balancer, for tests and the bench.

Several ``python -m ipse proxy`` processes share one store; HAProxy (the system's package) runs
``deploy/haproxy.cfg``, the configuration the deployment notes document, with round robin and no
stickiness, on 127.0.0.1 ports only. Conversations are driven through it as a client would:
each one a sequence of streamed requests whose history grows, with an answered checkpoint call
from its third turn on, so those requests are handed off. The scripted upstream answers every
request from its body (``metadata.user_id`` names the conversation and the turn), so a client
knows the exact bytes that are its own.

A stream cut by a replica's death is a clean error (a connection closed before the end, or a
502/503 from HAProxy), and everything it got before the cut is the start of its own bytes; the
client then sends the same request again, at most ``retries`` times. Every process started here
is stopped by the context manager that started it; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import orjson

from tests.support.anthropic_upstream import Reply, Upstream, stream_bytes
from tests.support.sql import scratch_schema

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"
REPLICAS = 3  # the servers deploy/haproxy.cfg lists
MODEL = "claude-replicas"
CHECKPOINT_TURN = 2  # the first turn whose history holds the answered checkpoint call
PACE = 0.04  # seconds before each of a stream's seven events


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, deadline: float, process: subprocess.Popen[bytes] | None = None) -> None:
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer in time")


def _stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Stop a process this module started: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


# ------------------------------------------------------------------------------ the processes


@dataclass
class Replica:
    """One ``ipse proxy`` process."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def inflight(self) -> int:
        """The requests this replica is serving now, as its health document says (0 when it
        does not answer)."""
        try:
            with urllib.request.urlopen(f"{self.url}/ipse/health", timeout=1) as answer:
                return int(json.loads(answer.read())["inflight"])
        except (OSError, ValueError, KeyError):
            return 0

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye (what a crashed machine does)."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@contextlib.contextmanager
def replicas(
    count: int,
    upstream: str,
    store: str,
    folder: Path,
    *,
    timeout: float = 60.0,
    options: Sequence[str] = (),
) -> Iterator[list[Replica]]:
    """``count`` proxies on ``store`` (each also given ``options``), all answering, stopped
    at the end of the block."""
    started: list[Replica] = []
    env = {**os.environ, "IPSE_HOME": str(folder / "home")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")) if p
    )
    try:
        for n in range(count):
            port = free_port()
            log = folder / f"replica-{n + 1}.log"
            with log.open("wb") as out:
                command = [
                    sys.executable,
                    "-m",
                    "ipse",
                    "proxy",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--anthropic-upstream",
                    upstream,
                    "--store",
                    store,
                    "--no-analysis",
                    *options,
                ]
                process = subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            started.append(Replica(port, process, log))
        deadline = time.monotonic() + timeout
        for replica in started:
            _wait_http(f"{replica.url}/ipse/health", deadline, replica.process)
        yield started
    finally:
        for replica in started:
            _stop(replica.process)


def haproxy_binary() -> str | None:
    return shutil.which("haproxy")


@contextlib.contextmanager
def load_balancer(servers: list[Replica], folder: Path, *, timeout: float = 30.0) -> Iterator[str]:
    """HAProxy running ``deploy/haproxy.cfg`` in front of ``servers`` (three), its URL."""
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError("haproxy is not installed (apt-get install haproxy)")
    if len(servers) != REPLICAS:
        raise ValueError(f"deploy/haproxy.cfg lists {REPLICAS} servers, got {len(servers)}")
    port = free_port()
    env = {**os.environ, "IPSE_LB_BIND": f"127.0.0.1:{port}"}
    for n, replica in enumerate(servers, start=1):
        env[f"IPSE_REPLICA_{n}"] = f"127.0.0.1:{replica.port}"
    check = subprocess.run(
        [binary, "-c", "-q", "-f", str(HAPROXY_CONFIG)],
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if check.returncode != 0:
        raise RuntimeError(f"haproxy -c: {check.stderr.decode(errors='replace').strip()}")
    with (folder / "haproxy.log").open("wb") as out:
        process = subprocess.Popen(
            [binary, "-db", "-f", str(HAPROXY_CONFIG)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_http(f"{url}/ipse/health", time.monotonic() + timeout, process)
        yield url
    finally:
        _stop(process)


@contextlib.contextmanager
def fresh_schema(base: str) -> Iterator[str]:
    """A PostgreSQL URL whose tables land in a new schema, dropped at the end."""
    with scratch_schema(base, "ipse_replicas_") as (url, _):
        yield url


# ------------------------------------------------------------------------------ the traffic


def session(conversation: int) -> str:
    return f"replicas-{conversation}"


def checkpoint_id(conversation: int) -> str:
    return f"toolu_{conversation}_{CHECKPOINT_TURN - 1}"


def marker(conversation: int, turn: int) -> str:
    return f"c{conversation}-t{turn}"


def body(conversation: int, turn: int) -> bytes:
    """The request of ``turn`` in a conversation: its history has ``turn`` tool calls, the one
    before `CHECKPOINT_TURN` a call of the checkpoint tool, each with its result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"task {conversation}"}]
    for i in range(turn):
        call_id = f"toolu_{conversation}_{i}"
        checkpoint = i == CHECKPOINT_TURN - 1
        name = "micro_handoff" if checkpoint else "Bash"
        arguments = {"notes": f"notes of {conversation}"} if checkpoint else {"cmd": f"make {i}"}
        output = "saved" if checkpoint else f"output {conversation}.{i} " * 40
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {i}"},
                    {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
            },
        ]
    document = {
        "model": MODEL,
        "max_tokens": 64,
        "stream": True,
        "system": f"you are agent {conversation}",
        "metadata": {"user_id": marker(conversation, turn)},
        "messages": messages,
    }
    return orjson.dumps(document)


def answer(request: dict[str, Any]) -> Reply:
    """The upstream's reply to a request: named after its conversation and turn."""
    metadata = request.get("metadata") or {}
    return {"text": f"answer to {metadata.get('user_id')}", "pace": PACE}


def expected(conversation: int, turn: int) -> bytes:
    """The exact bytes a client should get for its request."""
    return stream_bytes(answer({"metadata": {"user_id": marker(conversation, turn)}}), MODEL)


def received(upstream: Upstream) -> dict[str, list[bytes]]:
    """The bodies the upstream got, by marker (a retried request more than once)."""
    out: dict[str, list[bytes]] = {}
    for request in list(upstream.received):
        if request["path"].split("?")[0] != "/v1/messages":
            continue
        out.setdefault(str(request["body"]["metadata"]["user_id"]), []).append(request["raw"])
    return out


@dataclass
class Outcome:
    """What the clients got."""

    exact: int = 0  # requests that got exactly their own bytes
    cut: int = 0  # attempts cut short (a clean error) and sent again
    cut_prefixes_own: bool = True  # every cut attempt had only the start of its own bytes
    wrong: list[str] = field(default_factory=list)  # got bytes that are not theirs
    failed: list[str] = field(default_factory=list)  # no complete answer after the retries
    attempts: dict[int, int] = field(default_factory=dict)  # per conversation
    wall: float = 0.0


async def _one(
    client: httpx.AsyncClient,
    url: str,
    conversation: int,
    turn: int,
    outcome: Outcome,
    retries: int,
    deadline: float,
) -> bool:
    own = expected(conversation, turn)
    content = body(conversation, turn)
    headers = {
        "x-api-key": "sk-replicas",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "x-claude-code-session-id": session(conversation),
    }
    for _ in range(retries + 1):
        if time.monotonic() > deadline:
            break
        outcome.attempts[conversation] = outcome.attempts.get(conversation, 0) + 1
        got = bytearray()
        status = 0
        try:
            async with client.stream(
                "POST", f"{url}/v1/messages", content=content, headers=headers
            ) as response:
                status = response.status_code
                async for chunk in response.aiter_raw():
                    got += chunk
        except httpx.TransportError:
            pass  # cut: what came before is checked below
        if status == 200 and bytes(got) == own:
            outcome.exact += 1
            return True
        if status in (0, 200) and own.startswith(bytes(got)):
            outcome.cut += 1  # the stream was cut before its end: a clean error, sent again
        elif status in (502, 503, 504):
            outcome.cut += 1  # the load balancer had no live replica for it at that moment
        else:
            outcome.wrong.append(f"{marker(conversation, turn)}: {status} {bytes(got)[:200]!r}")
            if status == 200:
                outcome.cut_prefixes_own = False
            return False
        await asyncio.sleep(0.1)
    outcome.failed.append(marker(conversation, turn))
    return False


async def _drive(
    url: str, conversations: int, turns: range, retries: int, timeout: float
) -> Outcome:
    outcome = Outcome()
    deadline = time.monotonic() + timeout
    limits = httpx.Limits(max_connections=conversations + 8, max_keepalive_connections=0)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits) as client:

        async def conversation(c: int) -> None:
            for turn in turns:
                if not await _one(client, url, c, turn, outcome, retries, deadline):
                    return

        await asyncio.gather(*(conversation(c) for c in range(conversations)))
    outcome.wall = time.perf_counter() - started
    return outcome


def drive(
    url: str,
    conversations: int,
    turns: int,
    *,
    retries: int = 3,
    timeout: float = 300.0,
    first: int = 0,
) -> Outcome:
    """Run ``conversations`` clients at once through ``url``, each its requests from turn
    ``first`` up to ``turns`` in order (a new connection per request, so round robin spreads
    every turn)."""
    return asyncio.run(_drive(url, conversations, range(first, turns), retries, timeout))


class Killable(Protocol):
    def kill(self) -> None: ...


@contextlib.contextmanager
def kill_when(
    condition: Callable[[], bool], victim: Killable, *, timeout: float = 120.0
) -> Iterator[list[float]]:
    """SIGKILL ``victim`` as soon as ``condition`` holds (polled); the kill times in the list."""
    killed: list[float] = []
    stop = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while not stop.is_set() and time.monotonic() < deadline:
            if condition():
                victim.kill()
                killed.append(time.monotonic())
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield killed
    finally:
        stop.set()
        thread.join(timeout=15)


def archived(store: str) -> tuple[set[tuple[str, str, str, str | None]], int, int]:
    """The archive's items (session, id, call and result addresses), and its blob count with
    the number of distinct addresses among them."""
    import psycopg

    with psycopg.connect(store, autocommit=True) as pg:
        items = pg.execute(
            "SELECT session, item_id, call_sha256, result_sha256 FROM archive_items"
        ).fetchall()
        blobs = pg.execute("SELECT count(*), count(DISTINCT sha256) FROM archive_blobs").fetchone()
    assert blobs is not None
    return {tuple(row) for row in items}, int(blobs[0]), int(blobs[1])


__all__ = [
    "CHECKPOINT_TURN",
    "HAPROXY_CONFIG",
    "Killable",
    "Outcome",
    "Replica",
    "answer",
    "archived",
    "body",
    "checkpoint_id",
    "drive",
    "expected",
    "fresh_schema",
    "haproxy_binary",
    "kill_when",
    "load_balancer",
    "marker",
    "received",
    "replicas",
    "session",
]
