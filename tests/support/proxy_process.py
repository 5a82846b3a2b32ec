"""``ipse proxy`` as a user runs it: a process of its own in the foreground, on a free loopback
port, with its record and log in a folder of the test's; stopped (SIGINT, as Ctrl-C does, then
a kill) when the ``with`` block ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.journey._world import free_port, health, poll


@dataclass
class ProxyProcess:
    url: str
    record: Path
    log: Path

    def records(self) -> list[dict[str, Any]]:
        """The exchanges the proxy recorded, in order."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]


@contextlib.contextmanager
def proxy_process(folder: Path, *options: str) -> Iterator[ProxyProcess]:
    """``python -m ipse proxy --port P --record ... --store ... OPTIONS`` until the block ends
    (an error when it does not answer its health check within 30 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    record, log = folder / "record.jsonl", folder / "proxy.log"
    argv = [sys.executable, "-m", "ipse", "proxy", "--port", str(port), "--record", str(record)]
    argv += ["--store", f"sqlite:///{folder / 'ipse.db'}", *options]
    env = {**os.environ, "IPSE_HOME": str(folder / "ipse-home")}
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            if not poll(lambda: health(url) or process.poll() is not None, 30.0) or (
                process.poll() is not None
            ):
                raise AssertionError(f"the proxy did not start: {log.read_text()[-2000:]}")
            yield ProxyProcess(url, record, log)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def autopilot_at(records: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """For each recorded request to ``path`` that offers tools (in ``tools``, or Codex's
    ``additional_tools`` input item), what the record says of the autopilot there ({}:
    nothing)."""
    found = []
    for record in records:
        request = record["request"]
        body = request.get("body")
        if not request["url"].split("?")[0].endswith(path) or not isinstance(body, dict):
            continue
        offers = body.get("tools") or any(
            isinstance(i, dict) and i.get("type") == "additional_tools"
            for i in body.get("input") or []
        )
        if offers:
            found.append((record.get("ipse") or {}).get("autopilot") or {})
    return found


def cut_at(records: list[dict[str, Any]], path: str) -> list[bool]:
    """For each request `autopilot_at` lists, whether the autopilot made a cut there."""
    return [autopilot.get("action") == "cut" for autopilot in autopilot_at(records, path)]
