"""Many concurrent streams through one proxy with a PostgreSQL store: every client gets exactly
its own bytes, and what the proxy costs against a direct connection to the same upstream.

The upstream is a small asyncio HTTP server in its own process (loopback only). Each request
carries a marker (its first user message); the upstream answers with an Anthropic event stream
of ``--events`` events, ``--gap`` ms apart, every one naming that marker and its position, so a
client can check that the bytes it got are exactly the bytes made for it: nothing from another
stream, nothing missing, nothing twice. A quarter of the requests hold an answered checkpoint
call, so the proxy hands them off and writes their archive and anchors to the store while the
other streams run. The proxy is ``python -m ipse proxy --store URL`` in its own process, with the
store in a fresh schema of ``$IPSE_TEST_DATABASE_URL`` (dropped at the end; ``--store sqlite``
for the default store instead).

Measured in one run: ``--streams`` clients at once (default 200), ``--rounds`` times, first
direct, then through the proxy (and, with ``--workers N``, through a second proxy of N workers
on a store of its own, in turn with the first); prints how many clients got exactly their own
bytes, the store's conversation count, the wall time of a round through the proxy over direct,
and with ``--workers`` the wall time of N workers over one. It stops by itself.

    python bench/proxy_streams.py [--streams 200] [--rounds 3] [--events 20] [--gap 5]
                                  [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

import httpx
import orjson

HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


def _expected(marker: str, events: int) -> list[bytes]:
    """The event stream the upstream makes for ``marker`` (the client's own bytes)."""
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    start = {
        "type": "message_start",
        "message": {
            "id": f"msg_{marker}",
            "type": "message",
            "role": "assistant",
            "model": "bench",
            "content": [],
            "stop_reason": None,
            "usage": usage,
        },
    }
    out = [b"event: message_start\ndata: " + orjson.dumps(start) + b"\n\n"]
    for n in range(events):
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f"{marker}:{n} "},
        }
        out.append(b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\n")
    out.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return out


def _marker_of(body: bytes) -> str:
    request = orjson.loads(body)
    for message in reversed(request["messages"]):
        if message["role"] == "user" and isinstance(message["content"], str):
            return str(message["content"]).split()[-1]
    return "none"


async def _serve_upstream(port: int, events: int, gap: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b"{}"
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                for n, chunk in enumerate(_expected(_marker_of(body), events)):
                    if n and gap:
                        await asyncio.sleep(gap)
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=2048)
    async with server:
        await server.serve_forever()


def _upstream_process(port: int, events: int, gap: float) -> None:
    asyncio.run(_serve_upstream(port, events, gap))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str) -> None:
    for _ in range(600):
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer")


def _body(marker: str, checkpoint: bool) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"start {marker}"}]
    if checkpoint:
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": f"toolu_r{marker}", "name": "Read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_r{marker}",
                        "content": f"contents of {marker} " * 200,
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "saving"},
                    {
                        "type": "tool_use",
                        "id": f"toolu_c{marker}",
                        "name": "micro_handoff",
                        "input": {"notes": f"notes {marker}"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_c{marker}", "content": "saved"}
                ],
            },
            {"role": "assistant", "content": "continuing"},
            {"role": "user", "content": f"go on {marker}"},
        ]
    body = {"model": "claude-bench", "max_tokens": 16, "stream": True, "messages": messages}
    return orjson.dumps(body)


async def _round(url: str, streams: int, events: int, tag: str) -> tuple[int, float]:
    """``streams`` clients at once; how many got exactly their own bytes, and the wall time."""
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)

    async def one(client: httpx.AsyncClient, n: int) -> bool:
        marker = f"{tag}{n:04d}x{secrets.token_hex(4)}"
        headers = {**HEADERS, "x-claude-code-session-id": f"bench-{marker}"}
        got = bytearray()
        async with client.stream(
            "POST", url, content=_body(marker, n % 4 == 0), headers=headers
        ) as response:
            async for chunk in response.aiter_raw():
                got += chunk
            ok = response.status_code == 200
        return ok and bytes(got) == b"".join(_expected(marker, events))

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        results = await asyncio.gather(*(one(client, n) for n in range(streams)))
    return sum(results), time.perf_counter() - started


def _store_url(kind: str, home: str) -> tuple[str, str | None]:
    if kind == "sqlite":
        return f"sqlite:///{home}/ipse.db", None
    base = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not base:
        raise SystemExit(
            "IPSE_TEST_DATABASE_URL names no PostgreSQL server (or use --store sqlite)"
        )
    import psycopg

    schema = "ipse_bench_" + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}", schema


def _drop(schema: str | None) -> None:
    if schema is None:
        return
    import psycopg

    with psycopg.connect(os.environ["IPSE_TEST_DATABASE_URL"], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _conversations(store: str) -> tuple[int, int]:
    """The conversations the store holds, and the handoffs among them."""
    from ipse.store import open_conversations

    conversations = open_conversations(store)
    try:
        found = conversations.conversations()
        return len(found), sum(c.handoffs for c in found)
    finally:
        conversations.close()


def _proxy(
    args: argparse.Namespace, direct: str, workers: int
) -> tuple[subprocess.Popen[bytes], str, str, str | None]:
    """``python -m ipse proxy`` with ``workers`` workers on a store of its own: the process,
    its URL, the store URL and the schema to drop."""
    port = _free_port()
    home = tempfile.mkdtemp(prefix="ipse-bench-streams-")
    store, schema = _store_url(args.store, home)
    command = [sys.executable, "-m", "ipse", "proxy", "--port", str(port),
               "--anthropic-upstream", direct, "--store", store, "--no-analysis",
               "--workers", str(workers)]  # fmt: skip
    process = subprocess.Popen(
        command,
        env={**os.environ, "IPSE_HOME": home},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    _wait(url + "/ipse/health")
    return process, url, store, schema


def _cpu(pid: int | None) -> float:
    """CPU seconds used so far by process ``pid`` and its live children (Linux ``/proc``;
    0 elsewhere)."""
    if pid is None or not os.path.exists("/proc"):
        return 0.0
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _rounds(
    args: argparse.Namespace, targets: dict[str, tuple[str, int | None]], upstream: int | None
) -> dict[str, list[float]]:
    """``--rounds`` rounds, each target in turn: clients with exactly their own bytes, seconds,
    and the CPU seconds of the target's processes, of the clients and of the upstream."""
    totals = {name: [0, 0.0, 0.0, 0.0, 0.0] for name in targets}
    for r in range(args.rounds):
        for name, (base, pid) in targets.items():
            before = (_cpu(pid), time.process_time(), _cpu(upstream))
            exact, seconds = asyncio.run(
                _round(base + "/v1/messages", args.streams, args.events, f"r{r}{name[0]}{name[-1]}")
            )
            after = (_cpu(pid), time.process_time(), _cpu(upstream))
            totals[name][0] += exact
            totals[name][1] += seconds
            for n in range(3):
                totals[name][2 + n] += after[n] - before[n]
            print(
                f"  round {r + 1} {name:9}: {exact}/{args.streams} clients got exactly "
                f"their own bytes, {seconds:.2f} s; CPU s: proxy {after[0] - before[0]:.2f}, "
                f"clients {after[1] - before[1]:.2f}, upstream {after[2] - before[2]:.2f}"
            )
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200, help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of that many clients")
    parser.add_argument("--events", type=int, default=20, help="events per stream")
    parser.add_argument("--gap", type=float, default=5.0, help="ms between upstream events")
    parser.add_argument("--store", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument(
        "--workers", type=int, default=1, help="also run a proxy with this many workers"
    )
    args = parser.parse_args()
    up_port = _free_port()
    upstream = multiprocessing.Process(
        target=_upstream_process, args=(up_port, args.events, args.gap / 1000), daemon=True
    )
    upstream.start()
    direct = f"http://127.0.0.1:{up_port}"
    counts = sorted({1, args.workers})
    proxies = {}
    try:
        for workers in counts:
            proxies[f"proxy x{workers}"] = _proxy(args, direct, workers)
        print(
            f"{args.streams} concurrent streams x {args.rounds} rounds, {args.events} events "
            f"{args.gap} ms apart, store: {args.store}, proxy workers: {counts}"
        )
        targets = {"direct": (direct, None), **{n: (p[1], p[0].pid) for n, p in proxies.items()}}
        totals = _rounds(args, targets, upstream.pid)
        _report(args, proxies, totals)
    finally:
        for process, _, _, schema in proxies.values():
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=60)
            _drop(schema)
        upstream.terminate()


def _report(
    args: argparse.Namespace,
    proxies: dict[str, tuple[subprocess.Popen[bytes], str, str, str | None]],
    totals: dict[str, list[float]],
) -> None:
    expected = args.streams * args.rounds
    wanted = args.rounds * len(range(0, args.streams, 4))
    d = totals["direct"]
    failed = d[0] != expected
    print(f"exact: direct {d[0]}/{expected}")
    for name, (process, _, store, _) in proxies.items():
        # the bookkeeping drains on a clean stop: then the store has every conversation
        process.terminate()
        process.wait(timeout=120)
        booked, handoffs = _conversations(store)
        p = totals[name]
        print(
            f"{name}: exact {p[0]}/{expected}; conversations in the store {booked}/{expected} "
            f"(handoffs {handoffs}/{wanted}); wall time over direct {p[1] / d[1]:.2f}; the "
            f"proxy busy {p[2] / p[1]:.2f} cores, the clients {p[3] / p[1]:.2f}, the "
            f"upstream {p[4] / p[1]:.2f}"
        )
        failed |= p[0] != expected or booked != expected or handoffs != wanted
    if len(proxies) > 1:
        one, more = (totals[name][1] for name in proxies)
        print(f"wall time {list(proxies)[1]} over proxy x1: {more / one:.2f}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
