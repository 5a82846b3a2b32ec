"""The real llama.cpp server for tests: ``../shared/tools/llama-server`` running SmolLM2
(``IPSE_TEST_MODEL`` names the gguf file; `.ci/run` downloads it). Without them a test that needs
the server skips, saying why, unless ``IPSE_REQUIRE_CLIENTS`` is set (CI), where it fails."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

LLAMA_SERVER = SHARED_DATA.parent / "tools" / "llama-server"
REQUIRE_CLIENTS = os.environ.get("IPSE_REQUIRE_CLIENTS", "") not in ("", "0")
# an 8k context, one slot, one thread, short deterministic answers
_FLAGS = ["-c", "8192", "-np", "1", "-t", "1", "-n", "48", "--temp", "0", "--seed", "1", "--jinja"]


def model_path() -> Path:
    """The SmolLM2 model file; skips (or fails under IPSE_REQUIRE_CLIENTS) without it."""
    value = os.environ.get("IPSE_TEST_MODEL")
    if value and Path(value).is_file() and LLAMA_SERVER.is_file():
        return Path(value)
    why = "IPSE_TEST_MODEL (the SmolLM2 gguf) or ../shared/tools/llama-server is missing"
    if REQUIRE_CLIENTS:
        pytest.fail(f"{why} (IPSE_REQUIRE_CLIENTS is set)")
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(model: Path) -> Iterator[str]:
    """A running llama-server (its base URL), healthy before it is yielded, stopped after."""
    port = free_port()
    process = subprocess.Popen(
        [str(LLAMA_SERVER), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), *_FLAGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None:
                raise RuntimeError("llama-server exited at start")
            if time.monotonic() > deadline:
                raise RuntimeError("llama-server did not become healthy in 60 s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
