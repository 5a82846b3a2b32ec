"""What the proxy's autopilot adds to the requests it does not cut: ``--autopilot cut`` against
``--autopilot off``, two ``python -m ipse proxy`` processes in front of the same local upstream
(bench/proxy.py's: an Anthropic event stream), measured in one run, requests interleaved.

Bodies (a conversation of turns: a prompt, a Read call with its result, an answer; the model's
window and the thresholds are the policy's defaults for it, no agent CLI named):

- small: one prompt (the autopilot never parses it: its bytes cannot reach the soft threshold);
- below soft: a conversation just under the soft threshold (still never parsed);
- above soft: conversations that start above the soft threshold and grow a turn a request, a
  new one every 40 requests: each one's first request is planned in full and cut (its history
  crossed the soft threshold, was nudged and reached the cut size), the later ones only append
  to what was planned and stay below the soft threshold after the cut, so they are written from
  the conversation's plan.

For each: p50 and p95 of the total time, cut and off, the milliseconds the autopilot adds and
the ratio. Target: p50 added at most 2 ms on requests that are not parsed.

    python bench/autopilot_latency.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import orjson

BENCH = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_proxy", BENCH / "proxy.py")
assert _spec is not None and _spec.loader is not None
proxy_bench: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(proxy_bench)

MODEL = "claude-bench"


def conversation(target: int, turns: int = 0, name: str = "bench") -> bytes:
    """An Anthropic body of about ``target`` bytes (and ``turns`` more turns): turns of a
    prompt, a Read call, its result and an answer, then a new prompt."""
    messages: list[Any] = []
    turn = 0
    while len(orjson.dumps(messages)) < target - 3_000 or turn < turns:
        turn += 1
        call = f"toolu_{turn:04d}"
        result = "".join(f"{turn}.{n}: value {turn * n}\n" for n in range(120))
        messages += [
            {"role": "user", "content": f"Prompt {turn}: read f{turn}."},
            {"role": "assistant", "content": [
                {"type": "text", "text": f"Reading f{turn}."},
                {"type": "tool_use", "id": call, "name": "Read", "input": {"path": f"/f{turn}"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": result},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": f"Answer {turn}."}]},
        ]  # fmt: skip
    # the new prompt is the next turn's, so each request's history starts with the one before
    messages.append({"role": "user", "content": f"Prompt {turn + 1}: read f{turn + 1}."})
    body = {"model": MODEL, "max_tokens": 1024, "stream": True, "system": name,
            "messages": messages}  # fmt: skip
    return orjson.dumps(body)


def growing(start: int, count: int, per: int = 40) -> list[bytes]:
    """``count`` requests of conversations that each start at ``start`` bytes and grow a turn
    a request, a new one every ``per`` requests."""
    first = orjson.loads(conversation(start))["messages"]
    turns = (len(first) - 1) // 4
    return [conversation(0, turns + n % per, name=f"bench {n // per}") for n in range(count)]


def _start(port: int, upstream: str, home: str, mode: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "ipse", "proxy", "--port", str(port),
               "--anthropic-upstream", upstream, "--store", f"sqlite:///{home}/{mode}.db",
               "--no-analysis", "--autopilot", mode]  # fmt: skip
    env = {**os.environ, "IPSE_HOME": home}
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(urls: dict[str, str], bodies: list[bytes]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in urls}
    with httpx.Client(timeout=60) as client:
        for _ in range(5):  # warm every path (connections)
            for url in urls.values():
                proxy_bench._one(client, url + "/v1/messages", proxy_bench.small_body())
        for body in bodies:  # interleaved, so drift hits each alike
            for name, url in urls.items():
                samples[name].append(proxy_bench._one(client, url + "/v1/messages", body)[1])
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="requests per body and proxy")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 20
    from ipse.handoff._autopilot import thresholds
    from ipse.handoff._autopilot_plan import bytes_per_token
    from ipse.handoff._shared import AutopilotPolicy, RequestState, limits_for

    limits = limits_for(MODEL, "anthropic")
    found = thresholds(RequestState(0, None, limits), AutopilotPolicy())
    ratio = bytes_per_token()
    soft_bytes, hard_bytes = int(found.soft * ratio), int(found.hard * ratio)
    below = conversation(int(soft_bytes * 0.9))
    bodies = {
        "small": [proxy_bench.small_body()] * args.rounds,
        "below soft": [below] * args.rounds,
        "above soft": growing(int(soft_bytes * 1.2), args.rounds),
    }
    up, cut_port, off_port = (proxy_bench._free_port() for _ in range(3))
    upstream = multiprocessing.Process(
        target=proxy_bench._upstream_process, args=(up, 10, 0.0), daemon=True
    )
    upstream.start()
    direct = f"http://127.0.0.1:{up}"
    home = tempfile.mkdtemp(prefix="ipse-bench-autopilot-")
    started = [_start(cut_port, direct, home, "cut"), _start(off_port, direct, home, "off")]
    urls = {"cut": f"http://127.0.0.1:{cut_port}", "off": f"http://127.0.0.1:{off_port}"}
    try:
        for url in urls.values():
            proxy_bench._wait(url + "/ipse/health")
        print(f"model {MODEL}: soft {found.soft:,} tokens (~{soft_bytes:,} bytes), hard "
              f"{found.hard:,} (~{hard_bytes:,} bytes); {args.rounds} rounds")  # fmt: skip
        for name, sent in bodies.items():
            samples = measure(urls, sent)
            sizes = sorted({len(b) for b in sent})
            print(f"\n{name} ({sizes[0]:,} to {sizes[-1]:,} bytes):")
            for q, pick in (("p50", statistics.median), ("p95", _p95)):
                cut, off = pick(samples["cut"]), pick(samples["off"])
                print(f"  total {q}: off {off:7.2f} ms  cut {cut:7.2f} ms  "
                      f"added {cut - off:+6.2f} ms  ratio {cut / off:5.2f}")  # fmt: skip
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=10)
        upstream.terminate()


def _p95(values: list[float]) -> float:
    return float(proxy_bench._pct(values, 0.95))


if __name__ == "__main__":
    main()
