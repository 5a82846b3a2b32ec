"""One request's life in the proxy: the `Exchange` (what came in, what went out, what came back)
and the `Flight` that counts it in flight exactly once, however it ends.

Both are plain values shared by the app (which fills them), the bookkeeping (which books them)
and the log line (which shows them), so none of those needs to know the others.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ipse.handoff.wire import Rewrite
from ipse.proxy._wire import Provider


@dataclass
class Exchange:
    """One request through the proxy, from its first byte to its booking."""

    method: str
    path: str
    query: str
    provider: Provider
    dialect: str | None
    key: str | None
    headers: list[tuple[str, str]]
    client_body: bytes
    sent_body: bytes
    parsed: Any
    rewrite: Rewrite | None
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    started: float = 0.0
    first_byte: float | None = None
    finished: float = 0.0
    error: str | None = None
    handoff_error: str | None = None  # the handoff failed on a body it could not read
    disconnected: bool = False
    streaming: bool = False  # the response is an event stream
    saved_tokens: int | None = None  # what the handoff saved (set by the bookkeeping)
    counted: Future[int | None] | None = None  # the store's count of the conversation's requests
    model_hint: str | None = None  # the body's model, while the parsed body is not kept

    @property
    def model(self) -> str | None:
        if not isinstance(self.parsed, dict):
            return self.model_hint
        model = self.parsed.get("model")
        return model if isinstance(model, str) else None

    @property
    def saved_bytes(self) -> int:
        """The bytes the handoff took off the request (0 without one)."""
        if self.rewrite is None or not self.rewrite.applied:
            return 0
        return max(0, len(self.client_body) - len(self.sent_body))


class Flight:
    """A request counted in flight: `land` ends it once, whichever path gets there first (the
    stream's end, an error answer, a refusal, an exception)."""

    def __init__(self, counter: InFlight) -> None:
        self._counter = counter
        self.landed = False
        self.handed_to: object = None  # the streamed response that lands it when it ends
        counter.inflight += 1
        counter.requests += 1

    def land(self) -> None:
        if not self.landed:
            self.landed = True
            self._counter.inflight -= 1


class InFlight:
    """The counters a health document shows: requests seen, and those not yet answered whole."""

    def __init__(self) -> None:
        self.requests = 0
        self.inflight = 0

    def take_off(self) -> Flight:
        return Flight(self)


__all__ = ["Exchange", "Flight", "InFlight"]
