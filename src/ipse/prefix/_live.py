"""The cache analysis of one request as it passes, against its conversation's previous request.

A proxy (``ipse proxy``, the LiteLLM hook) sees requests one at a time: `LiveAnalysis` keeps the
previous request of each conversation it has seen, bounded in count and in bytes (the oldest
conversations leave first), replays the pair through the provider's cache model (`analyze`) and
answers with the prediction, the recorded usage and the cause and cost of a lost reuse. One
instance per process; not thread safe (each front end calls it from its one bookkeeping thread).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ipse.prefix._actual import actual_tokens
from ipse.prefix._report import analyze
from ipse.prefix._requests import Request

MAX_CONVERSATIONS = 128  # conversations whose previous request is kept
MAX_BYTES = 128 * 1024 * 1024  # the kept requests' bodies, at most (one is always kept)


class LiveAnalysis:
    """Each conversation's previous request, and the analysis of the next one against it."""

    def __init__(
        self, max_conversations: int = MAX_CONVERSATIONS, max_bytes: int = MAX_BYTES
    ) -> None:
        self.max_conversations = max_conversations
        self.max_bytes = max_bytes
        self._previous: OrderedDict[str, tuple[Request, int]] = OrderedDict()
        self._bytes = 0
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._previous)

    def analyze(
        self,
        key: str,
        body: Mapping[str, Any],
        provider: str,
        *,
        size: int,
        started: float,
        first_byte: float,
        usage: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """The analysis of ``body`` (``size`` bytes, sent at ``started``, answered from
        ``first_byte``, epoch seconds) in conversation ``key``: predicted and recorded tokens,
        the cause and detail of a lost reuse, the tokens lost, the cost and the cost lost; an
        ``error`` instead when the body cannot be analysed (it never raises for a body)."""
        when = datetime.fromtimestamp(started, tz=UTC)
        first = datetime.fromtimestamp(first_byte, tz=UTC)
        current = Request(next(self._counter), body, provider, when, first, usage)
        previous = self._keep(key, current, size)
        requests = [previous, current] if previous is not None else [current]
        try:
            report = analyze(requests, provider, tokenizer="auto")
        except Exception as exc:  # an odd body must not stop a proxy's bookkeeping
            return {"error": str(exc)}
        row = report.rows[-1]
        actual = actual_tokens(usage)
        return {
            "predicted": row.predicted.to_json(),
            "actual": actual.to_json() if actual is not None else None,
            "cause": row.cause.kind if row.cause else None,
            "detail": row.cause.detail if row.cause else None,
            "lost_tokens": row.lost_tokens,
            "cost_usd": round(row.cost_usd, 6),
            "cost_lost_usd": round(row.cost_lost_usd, 6),
        }

    def _keep(self, key: str, current: Request, size: int) -> Request | None:
        """Keep ``current`` as the conversation's previous request; the one it replaces."""
        previous, old_size = self._previous.pop(key, (None, 0))
        self._previous[key] = (current, size)
        self._bytes += size - old_size
        while len(self._previous) > 1 and (
            len(self._previous) > self.max_conversations or self._bytes > self.max_bytes
        ):
            _, (_, dropped) = self._previous.popitem(last=False)
            self._bytes -= dropped
        return previous


__all__ = ["MAX_BYTES", "MAX_CONVERSATIONS", "LiveAnalysis"]
