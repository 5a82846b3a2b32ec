"""Benchmark: ``ipse report`` on a 10,000-request log, its page size, and how fast it opens.

Generates, into a temporary folder, a JSONL log of N Anthropic exchanges (default 10,000) with
recorded usage: a coding conversation that grows by one tool exchange per request and is reset
every 50 requests (the sawtooth a long session with compactions draws), behind a fixed system
prompt and tool list. Then measures, in the same run:

* building the page (``ipse report LOG -o PAGE``, a fresh process) against ``ipse inspect LOG
  --json`` (a fresh process that reads the same log and counts every request): the ratio says
  what the analysis and drawing add to reading;
* the page's size (target: a few MB);
* opening it in headless Chromium (Playwright, network refused) until the ``load`` event,
  against opening a plain page of the same size with no charts: best of 5 each (target: under a
  second).

    python bench/report.py [--requests N] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = [
    {"name": name, "description": f"{name} tool", "input_schema": {"type": "object"}}
    for name in ("Bash", "Read", "Edit", "Grep", "Glob")
]
SYSTEM = "You are a careful coding agent. " * 40
RESET = 50  # requests between two resets of the conversation


def _usage(total: int, read: int) -> dict[str, int]:
    return {
        "input_tokens": max(total - read, 1),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": max(total - read - 3, 0),
        "output_tokens": 40,
    }


def write_log(path: Path, requests: int) -> None:
    """The generated log: see the module docstring."""
    with path.open("w") as out:
        messages: list[dict[str, Any]] = []
        read = 0
        for n in range(requests):
            if n % RESET == 0:
                messages = [
                    {"role": "user", "content": f"Task {n // RESET}: fix the failing test."}
                ]
                read = 0
            total = 600 + 90 * len(messages)
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "system": SYSTEM,
                "tools": TOOLS,
                "messages": messages,
            }
            record = {
                "time": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                "request": {
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "body": body,
                },
                "response": {
                    "status": 200,
                    "body": {"type": "message", "usage": _usage(total, read)},
                },
            }
            out.write(json.dumps(record) + "\n")
            read = total
            call = f"toolu_{n:05d}"
            tool = TOOLS[n % len(TOOLS)]["name"]
            messages = [
                *messages,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Step {n}: checking with {tool}."},
                        {"type": "tool_use", "id": call, "name": tool, "input": {"arg": n}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call, "content": "ok " * 10}
                    ],
                },
            ]


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr.decode(errors='replace')}")
    return elapsed


def _open_times(chromium: str, pages: list[Path], repeat: int = 5) -> list[float]:
    from playwright.sync_api import sync_playwright

    best = [float("inf")] * len(pages)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(repeat):
            for i, page_path in enumerate(pages):
                page = browser.new_page()
                page.route("http*://**", lambda route: route.abort())
                start = time.perf_counter()
                page.goto(page_path.as_uri(), wait_until="load")
                best[i] = min(best[i], time.perf_counter() - start)
                page.close()
        browser.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--chromium", default=os.environ.get("IPSE_CHROMIUM"))
    args = parser.parse_args()
    chromium = args.chromium or shutil.which("chromium")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        log = tmp / "log.jsonl"
        write_log(log, args.requests)
        env_home = {"IPSE_HOME": str(tmp / "home")}
        os.environ.update(env_home)
        ipse = [sys.executable, "-m", "ipse"]
        page = tmp / "report.html"
        inspect_s = _timed([*ipse, "inspect", str(log), "--json"])
        report_s = _timed([*ipse, "report", str(log), "-o", str(page)])
        size = page.stat().st_size
        print(f"report: {args.requests:,} requests, log {log.stat().st_size / 1e6:.1f} MB")
        print(f"  ipse inspect --json      {inspect_s * 1000:9.0f} ms")
        print(f"  ipse report              {report_s * 1000:9.0f} ms")
        print(f"  report / inspect         {report_s / inspect_s:9.2f}x")
        print(f"  page size                {size / 1e6:9.2f} MB  (target: a few MB)")
        if chromium is None:
            print("  no Chromium: opening time not measured (apt-get install chromium)")
            return
        plain = tmp / "plain.html"
        filler = "<p>" + "x" * 76 + "</p>\n"
        plain.write_text("<!doctype html><title>plain</title>" + filler * (size // len(filler)))
        report_open, plain_open = _open_times(chromium, [page, plain])
        print(f"  open the page (load)     {report_open * 1000:9.0f} ms  (target: under 1 s)")
        print(f"  open a plain page        {plain_open * 1000:9.0f} ms  (same size, no charts)")
        print(f"  page / plain             {report_open / plain_open:9.2f}x")


if __name__ == "__main__":
    main()
