"""What the proxy adds, as ratios against a direct connection to the same local upstream.

The upstream is a small asyncio HTTP server in its own process that answers every POST with an
Anthropic-style event stream (``--events`` events, ``--gap`` ms apart, usage in
``message_start``). The proxy is ``python -m ipse proxy`` in its own process, pointed at it.
Measured in one run:

0. The library alone: `ipse.handoff.wire.rewrite_request` on the 1 MB body, first and later
   requests, against an orjson parse and dump of the same body.
1. Latency, sequential requests, direct vs through the proxy: time to first byte and total, p50
   and p99; a small pass-through body, and a 1 MB body holding a checkpoint call (the proxy
   hands it off: the first request of the conversation reads and strips it, later ones reuse the
   rewritten prefix, as a conversation's growing requests do). Targets: p50 overhead at most
   2 ms pass-through, 10 ms with the rewrite.
2. Throughput: 50 concurrent streaming clients for ``--seconds``, requests per second through
   the proxy over direct (target at least 0.9).
3. Memory: the proxy process's resident set after 1,000 requests and after ``--requests``
   (default 10,000) more; it should stay flat.

    python bench/proxy.py [--requests N] [--rounds N] [--seconds S] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import orjson

REPO = Path(__file__).resolve().parents[1]
CAPTURED = (REPO / ".." / "shared" / "data" / "anthropic-http" / "captured-2" / "18.json").resolve()
HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


# ------------------------------------------------------------------------------- the upstream


def _events(count: int) -> list[bytes]:
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "bench",
            "content": [],
            "stop_reason": None,
            "usage": usage,
        },
    }
    out = [b"event: message_start\ndata: " + orjson.dumps(start) + b"\n\n"]
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "word "},
    }
    out += [b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\n"] * count
    out.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return out


async def _serve_upstream(port: int, events: int, gap: float) -> None:
    chunks = _events(events)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                for n, chunk in enumerate(chunks):
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

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def _upstream_process(port: int, events: int, gap: float) -> None:
    asyncio.run(_serve_upstream(port, events, gap))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str) -> None:
    for _ in range(300):
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer")


# ----------------------------------------------------------------------------------- bodies


def small_body() -> bytes:
    return orjson.dumps(
        {
            "model": "claude-bench",
            "max_tokens": 16,
            "stream": True,
            "messages": [{"role": "user", "content": "hello"}],
        }
    )


def big_body(size: int = 1_000_000) -> bytes:
    """A ~1 MB Anthropic body with a checkpoint call in the middle of its history."""
    if CAPTURED.exists():
        base = orjson.loads(CAPTURED.read_bytes())["request"]["content"]
        turn = base["messages"]
    else:
        turn = [
            {"role": "user", "content": "work on it"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "toolu_x", "name": "Read", "input": {"p": "a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_x", "content": "line\n" * 2000}
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]
        base = {"model": "claude-bench", "max_tokens": 16, "system": "bench"}
    messages: list[Any] = []
    n = 0
    while len(orjson.dumps(messages)) < size // 2:
        copy_ = orjson.loads(orjson.dumps(turn).replace(b"toolu_", b"toolu_%d_" % n))
        if messages and copy_[0]["role"] == messages[-1]["role"]:
            messages.append({"role": "assistant", "content": "ok"})
        messages += copy_
        n += 1
    if messages[-1]["role"] == "user":
        messages.append({"role": "assistant", "content": "ok"})
    messages += [
        {"role": "user", "content": "checkpoint now"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "saving"},
                {
                    "type": "tool_use",
                    "id": "toolu_cp",
                    "name": "micro_handoff",
                    "input": {"notes": "all of the above"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_cp", "content": "saved"}],
        },
        {"role": "assistant", "content": "continuing"},
    ]
    while len(orjson.dumps(messages)) < size:
        copy_ = orjson.loads(orjson.dumps(turn).replace(b"toolu_", b"toolu_%d_" % n))
        if copy_[0]["role"] == messages[-1]["role"]:
            messages.append({"role": "assistant", "content": "ok"})
        messages += copy_
        n += 1
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": "go on"})
    body = {**copy.deepcopy(base), "messages": messages, "stream": True}
    return orjson.dumps(body)


# ---------------------------------------------------------------------------------- latency


def _one(client: httpx.Client, url: str, body: bytes) -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    with client.stream("POST", url, content=body, headers=HEADERS) as response:
        for _ in response.iter_raw():
            if first is None:
                first = time.perf_counter()
        assert response.status_code == 200, response.status_code
    done = time.perf_counter()
    return ((first or done) - started) * 1000, (done - started) * 1000


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(direct: str, proxied: str, body: bytes, rounds: int) -> dict[str, float]:
    samples: dict[str, list[tuple[float, float]]] = {"direct": [], "proxy": []}
    with httpx.Client(timeout=60) as client:
        for _ in range(5):  # warm both paths (connections, the rewrite's prefix cache)
            _one(client, direct + "/v1/messages", body)
            _one(client, proxied + "/v1/messages", body)
        for _ in range(rounds):  # interleaved, so drift hits both alike
            samples["direct"].append(_one(client, direct + "/v1/messages", body))
            samples["proxy"].append(_one(client, proxied + "/v1/messages", body))
    out: dict[str, float] = {}
    for name, values in samples.items():
        for i, what in enumerate(("ttfb", "total")):
            series = [v[i] for v in values]
            out[f"{name}_{what}_p50"] = statistics.median(series)
            out[f"{name}_{what}_p99"] = _pct(series, 0.99)
    return out


# ------------------------------------------------------------------------------- throughput


async def _clients(url: str, body: bytes, seconds: float, concurrency: int) -> int:
    done = 0
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                async with client.stream("POST", url, content=body, headers=HEADERS) as r:
                    async for _ in r.aiter_raw():
                        pass
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


def throughput(direct: str, proxied: str, seconds: float, concurrency: int) -> dict[str, float]:
    body = small_body()
    a = asyncio.run(_clients(direct + "/v1/messages", body, seconds, concurrency)) / seconds
    b = asyncio.run(_clients(proxied + "/v1/messages", body, seconds, concurrency)) / seconds
    return {"direct_rps": a, "proxy_rps": b, "ratio": b / a}


# ---------------------------------------------------------------------------------- library


def library(rounds: int) -> dict[str, float]:
    """`rewrite_request` on the 1 MB body in this process: the first request of a checkpoint
    (read, strip, verify) and the later ones (the cached prefix, new tail spliced on), against
    an orjson parse and dump of the same body (what any JSON-handling proxy pays)."""
    from ipse.handoff._rewrite import clear_cache
    from ipse.handoff.wire import rewrite_request

    data = big_body()
    clear_cache()
    started = time.perf_counter()
    first = rewrite_request(orjson.loads(data), "anthropic")
    cold = (time.perf_counter() - started) * 1000
    assert first.applied, first.reason
    warm, baseline = [], []
    for _ in range(rounds):
        body = orjson.loads(data)
        started = time.perf_counter()
        again = rewrite_request(body, "anthropic", anchor=first.anchor)
        warm.append((time.perf_counter() - started) * 1000)
        assert again.cached
        started = time.perf_counter()
        orjson.dumps(orjson.loads(data))
        baseline.append((time.perf_counter() - started) * 1000)
    return {
        "cold_ms": cold,
        "warm_p50_ms": statistics.median(warm),
        "baseline_p50_ms": statistics.median(baseline),
    }


# ----------------------------------------------------------------------------------- memory


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _many(url: str, body: bytes, count: int, concurrency: int = 20) -> None:
    queue = iter(range(count))
    async with httpx.AsyncClient(timeout=60) as client:

        async def worker() -> None:
            for _ in queue:
                async with client.stream("POST", url, content=body, headers=HEADERS) as r:
                    async for _ in r.aiter_raw():
                        pass

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def memory(proxied: str, pid: int, requests: int) -> dict[str, float]:
    body = small_body()
    asyncio.run(_many(proxied + "/v1/messages", body, 1000))
    before = _rss_kib(pid)
    asyncio.run(_many(proxied + "/v1/messages", body, requests))
    after = _rss_kib(pid)
    return {
        "rss_after_1000_mib": before / 1024,
        "rss_after_more_mib": after / 1024,
        "growth_ratio": after / before if before else 0.0,
    }


# -------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="sequential requests per path")
    parser.add_argument("--seconds", type=float, default=5.0, help="throughput run length")
    parser.add_argument("--requests", type=int, default=10_000, help="requests for the memory run")
    parser.add_argument("--events", type=int, default=10, help="events per upstream response")
    parser.add_argument("--gap", type=float, default=2.0, help="ms between upstream events")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument(
        "--parts",
        default="library,latency,throughput,memory",
        help="which measurements, comma-separated",
    )
    parser.add_argument(
        "--proxy-arg", action="append", default=[], help="an extra argument for ipse proxy"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.requests = 20, 1.0, 500
    up_port, proxy_port = _free_port(), _free_port()
    upstream = multiprocessing.Process(
        target=_upstream_process, args=(up_port, args.events, args.gap / 1000), daemon=True
    )
    upstream.start()
    direct = f"http://127.0.0.1:{up_port}"
    home = tempfile.mkdtemp(prefix="ipse-bench-proxy-")
    env = {**os.environ, "IPSE_HOME": home}
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipse",
            "proxy",
            "--port",
            str(proxy_port),
            "--anthropic-upstream",
            direct,
            "--store",
            f"sqlite:///{home}/ipse.db",
            *args.proxy_arg,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proxied = f"http://127.0.0.1:{proxy_port}"
    try:
        _wait(proxied + "/ipse/health")
        parts = set(args.parts.split(","))
        if "library" in parts:
            lib = library(args.rounds)
            print(
                f"rewrite_request, 1 MB body: first {lib['cold_ms']:.1f} ms, then p50 "
                f"{lib['warm_p50_ms']:.2f} ms (orjson parse + dump of it: "
                f"{lib['baseline_p50_ms']:.2f} ms, ratio "
                f"{lib['warm_p50_ms'] / lib['baseline_p50_ms']:.2f})"
            )
        print(f"upstream: {args.events} events, {args.gap} ms apart; {args.rounds} rounds")
        bodies = (("pass-through", small_body()), ("1 MB handoff", big_body()))
        for name, body in bodies if "latency" in parts else ():
            result = latency(direct, proxied, body, args.rounds)
            print(f"\n{name} ({len(body):,} bytes):")
            for what in ("ttfb", "total"):
                for q in ("p50", "p99"):
                    d, p = result[f"direct_{what}_{q}"], result[f"proxy_{what}_{q}"]
                    print(
                        f"  {what:5} {q}: direct {d:7.2f} ms  proxy {p:7.2f} ms  "
                        f"added {p - d:+6.2f} ms  ratio {p / d:5.2f}"
                    )
        if "throughput" in parts:
            result = throughput(direct, proxied, args.seconds, 50)
            print(f"\n50 concurrent streaming clients, {args.seconds:.0f} s each:")
            print(
                f"  direct {result['direct_rps']:.0f} req/s  proxy {result['proxy_rps']:.0f}"
                f" req/s  ratio {result['ratio']:.2f} (target >= 0.9)"
            )
        if "memory" in parts:
            mem = memory(proxied, proxy.pid, args.requests)
            print(
                f"\nproxy memory: {mem['rss_after_1000_mib']:.1f} MiB after 1,000 requests, "
                f"{mem['rss_after_more_mib']:.1f} MiB after {args.requests:,} more "
                f"(ratio {mem['growth_ratio']:.2f})"
            )
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
        upstream.terminate()


if __name__ == "__main__":
    main()
