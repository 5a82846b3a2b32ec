"""One request's life in the proxy: the `Exchange` (what came in, what went out, what came back),
the `OpenRequest` that counts it as open exactly once however it ends, and `RequestCounters`,
the two counts a health document shows.

These are plain values shared by the request path (which fills them), the store writes and the
bookkeeping (which read them) and the log line (which shows them), so none of those needs to
know the others.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ipse import jsonio
from ipse.handoff._shared import conversation_key
from ipse.handoff.wire import AutopilotRewrite, Rewrite
from ipse.proxy._wire import Provider


@dataclass
class Exchange:
    """One request through the proxy, from its first byte to its record and log line."""

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
    handoff_event: bool = False  # the rewrite is the conversation's handoff, not a later request
    saved_tokens: int | None = None  # what the handoff saved (set by the bookkeeping)
    counted: Future[int | None] | None = None  # the store's count of the conversation's requests
    model_hint: str | None = None  # the body's model, while the parsed body is not kept
    autopilot: AutopilotRewrite | None = None  # what the autopilot made of the request
    autopilot_error: str | None = None  # the autopilot could not act on a body it planned

    @property
    def model(self) -> str | None:
        if not isinstance(self.parsed, dict):
            return self.model_hint
        model = self.parsed.get("model")
        return model if isinstance(model, str) else None

    @property
    def saved_bytes(self) -> int:
        """The bytes the handoff took off the request (0 without one)."""
        if (self.rewrite is None or not self.rewrite.applied) and self.autopilot_body is None:
            return 0
        return max(0, len(self.client_body) - len(self.sent_body))

    @property
    def autopilot_body(self) -> dict[str, Any] | None:
        """The body the autopilot sent (None: it changed nothing)."""
        return self.autopilot.body if self.autopilot is not None else None

    @property
    def handed_off(self) -> bool:
        """Whether the handoff rewrote the request."""
        return self.rewrite is not None and self.rewrite.applied

    def after_count(self) -> Exchange:
        """This exchange once its count in the store is done (its body read, its conversation
        keyed: `identify_conversation` runs first on the counting thread)."""
        if self.counted is not None:
            self.counted.result()
        return self


def identify_conversation(ex: Exchange, *, keep: bool = True) -> None:
    """Key the request's conversation and name its model, parsing the client's body when the
    handoff did not (off the request's path). ``keep``: hold the parsed body for the record and
    the analysis; without it (while the request is in flight) the parse is dropped at once, so
    a thousand big requests in flight do not each hold their body twice."""
    if ex.dialect is None or not ex.client_body:
        return
    parsed = ex.parsed
    if parsed is None:
        if not keep and ex.key is not None:
            return
        try:
            parsed = jsonio.loads(ex.client_body)
        except (jsonio.JSONDecodeError, ValueError):
            parsed = None
        if keep:
            ex.parsed = parsed
    if isinstance(parsed, dict):
        if ex.key is None:
            lowered = {k.lower(): v for k, v in ex.headers}
            ex.key = conversation_key(lowered, parsed, ex.dialect)
        model = parsed.get("model")
        ex.model_hint = model if isinstance(model, str) else None


class OpenRequest:
    """A request counted as open: `end` closes it once, whichever path gets there first (the
    stream's end, an error answer, a refusal, an exception)."""

    def __init__(self, counters: RequestCounters) -> None:
        self._counters = counters
        self.ended = False
        self.ended_by_stream = False  # a streamed response ends it when its stream ends
        counters.inflight += 1
        counters.requests += 1

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self._counters.inflight -= 1


class RequestCounters:
    """The counters a health document shows: requests seen, and those not yet answered whole."""

    def __init__(self) -> None:
        self.requests = 0
        self.inflight = 0

    def open(self) -> OpenRequest:
        return OpenRequest(self)


__all__ = ["Exchange", "OpenRequest", "RequestCounters", "identify_conversation"]
