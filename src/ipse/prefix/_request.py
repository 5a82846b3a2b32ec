"""One request to analyse: a request body (the provider's JSON, as sent) with what its log
knows about it (`ipse.prefix._requests` reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from ipse.transcript._shared import codec


class Request(msgspec.Struct, frozen=True):
    """One request body with what the log knows about it.

    A msgspec struct, not a dataclass: built twice for each request of a session (read, then
    numbered); as a frozen dataclass it costs a replay 6% more instructions (152 requests of a
    3 MB Claude Code session, `python bench/replay_instructions.py`).
    """

    index: int  # 0-based position in the log
    body: Mapping[str, Any]
    provider: str  # anthropic | openai
    time: datetime | None = None
    response_start: datetime | None = None
    usage: Mapping[str, Any] | None = None
    source: str = ""
    conversation: str | None = None  # known thread (Claude Code); None: matched by content
    agent: str | None = None  # the sub-agent that sent it (None: the main thread)
    version: str | None = None  # the harness's version, where the record says
    diagnostics: Mapping[str, Any] | None = None  # the API's cache diagnosis of its response
    compaction: bool = False  # the first call after a compaction, or the compacting call
    off_path: bool = False  # billed, but its response is not on the live path
    handoff: Mapping[str, Any] | None = None  # the handoff ipse made here (`RecordedHandoffs`)
    # the proxy's autopilot event here: a nudge or a cut of its own (`RecordedAutopilot`)
    autopilot: Mapping[str, Any] | None = None
    # its input tokens where no usage records them: a rewrite of a recorded request (``ipse
    # replay``) is sized from the request it rewrites, and its estimates are scaled to this
    tokens: int | None = None

    @property
    def model(self) -> str | None:
        value = self.body.get("model")
        return value if isinstance(value, str) else None


def provider_of(dialect: str) -> str:
    """The provider whose cache a dialect's requests go to (``anthropic``, ``openai``)."""
    return codec(dialect).provider
