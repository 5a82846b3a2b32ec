"""Fixtures for the proxy tests: a proxy served by a thread of the test process, pointed at a
scripted upstream or at the real llama.cpp server (SmolLM2, found through ``IPSE_TEST_MODEL``)."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ipse import jsonio
from ipse.handoff._rewrite import clear_cache
from ipse.proxy import ProxyConfig, Upstream, start_in_thread
from ipse.proxy._serve import RunningProxy
from tests.support.llama import llama_server, model_path

NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens


@dataclass
class Proxy:
    """A running proxy and what it wrote."""

    running: RunningProxy
    record: Path
    store: str
    log: io.StringIO

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def state(self) -> Any:
        return self.running.app.state.proxy

    def records(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [jsonio.loads(line) for line in self.record.read_bytes().splitlines() if line]

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every finished request is booked (store, record, log)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.state.pending == 0 and self.state.inflight == 0:
                return
            time.sleep(0.01)
        raise AssertionError("the proxy's bookkeeping did not settle")


ProxyFactory = Callable[..., AbstractContextManager[Proxy]]


@pytest.fixture
def proxy_factory(tmp_path: Path) -> ProxyFactory:
    return proxies(tmp_path)


def proxies(tmp_path: Path) -> ProxyFactory:
    """Proxies that write under ``tmp_path`` (for a fixture of a wider scope than a test's)."""

    @contextmanager
    def make(
        anthropic: str = NOWHERE, openai: str = NOWHERE, store: str | None = None, **options: Any
    ) -> Iterator[Proxy]:
        clear_cache()
        folder = Path(tmp_path) / f"proxy-{time.monotonic_ns()}"
        folder.mkdir()
        record = folder / "record.jsonl"
        store = store or f"sqlite:///{folder / 'ipse.db'}"
        log = io.StringIO()
        config = ProxyConfig(
            port=0,
            anthropic=Upstream.parse(anthropic),
            openai=Upstream.parse(openai),
            record=record,
            store=store,
            **options,
        )
        running = start_in_thread(config, log_stream=log)
        try:
            yield Proxy(running, record, store, log)
        finally:
            running.stop()

    return make


@pytest.fixture(scope="session")
def llama() -> Iterator[str]:
    """The real llama.cpp server with SmolLM2 (its base URL), one per test session."""
    with llama_server(model_path()) as url:
        yield url
