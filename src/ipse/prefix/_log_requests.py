"""The requests of a log of HTTP exchanges and of a Codex rollout (`ipse.prefix._requests`
reads the rest).

A log (a folder of exchanges, JSONL, HAR) is read with orjson, line by line, keeping the body
dicts as parsed, its repeated parts shared (`Interner`); exchange details (usage from SSE,
times from headers) come from the http-log reader's own helpers, so both agree. A Codex
rollout gives one Responses request per model call, every call a view of one shared list of
input items.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._handoff_events import RecordedAutopilot, RecordedHandoffs
from ipse.prefix._actual import compacts
from ipse.prefix._growing import SharedHistory
from ipse.prefix._request import Request, provider_of
from ipse.transcript._shared import parse_time

# ---------------------------------------------------------------------------------- http logs


class Interner:
    """Shares one object among equal parts of different requests (same bytes, same object).

    A log repeats its tools, its system prompt and its history in every request; parsed
    separately, each copy costs memory and garbage-collector time. Interning keeps the first
    copy of each and lets the rest go, and lets the flattener recognise repeats by identity.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[int, bytes], list[tuple[bytes, Any]]] = {}

    def one(self, value: Any) -> Any:
        data = jsonio.dumps(value)
        bucket = self._seen.setdefault((len(data), data[-64:]), [])
        for seen, obj in bucket:
            if seen == data:  # a byte comparison: memcmp, cheaper than hashing
                return obj
        bucket.append((data, value))
        return value

    def body(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The body with its tools, system prompt and messages (or input items) interned."""
        out = dict(body)
        for key in ("tools", "system"):
            if isinstance(out.get(key), list):
                out[key] = self.one(out[key])
        for key in ("messages", "input"):
            messages = out.get(key)
            if isinstance(messages, list):
                out[key] = [self.one(m) for m in messages]
        return out


def log_requests(p: Path, warnings: list[str]) -> Iterator[Request]:
    from ipse.transcript._shared import (  # (each format's reader imported on use)
        entry_conversation,
        exchange_fields,
        iter_entries,
    )

    interner = Interner()
    handoffs = RecordedHandoffs()
    autopilot = RecordedAutopilot()
    for index, (where, entry) in enumerate(iter_entries(p, warnings=warnings)):
        fields = exchange_fields(entry, where)
        body = fields.body
        if "count_tokens" in (fields.url or ""):
            body = {k: v for k, v in body.items() if k != "messages"}  # not a conversation turn
        yield Request(
            index,
            interner.body(body),
            provider_of(fields.provider),
            fields.time,
            fields.response_time or fields.time,
            fields.usage,
            where,
            entry_conversation(entry, fields.body),
            diagnostics=_diagnostics(entry),
            compaction=compacts(fields.usage),
            handoff=handoffs.event(entry),
            autopilot=autopilot.event(entry),
        )


def _diagnostics(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The API's cache diagnosis in a logged response (``diagnostics`` in the message: the
    body, or the ``message_start`` event of a streamed one), or None."""
    response = entry.get("response")
    body = response.get("body") if jsonio.is_object(response) else None
    if isinstance(body, str) and "cache_miss_reason" in body:  # streamed: find its event
        for line in body.splitlines():
            if line.startswith("data:") and "cache_miss_reason" in line:
                try:
                    event = jsonio.loads(line[5:])
                except jsonio.JSONDecodeError:
                    return None
                body = event.get("message") if jsonio.is_object(event) else None
                break
    if not jsonio.is_object(body):
        return None
    found = body.get("diagnostics")
    return found if jsonio.is_object(found) else None


# ------------------------------------------------------------------------------ codex rollouts


def rollout_requests(p: Path, warnings: list[str]) -> Iterator[Request]:
    """One Responses request per model call of a Codex rollout, with the recorded usage
    (``cached_input_tokens`` of the ``token_count`` event that followed it). A rollout forked
    from an earlier task says so (its ``session_meta`` names the parent): the calls it holds
    from before the fork began are the parent's, billed there, and not counted here (what was
    inherited goes to ``warnings``)."""
    from ipse.transcript._shared import rollout_requests

    fork = _fork(p)
    history: Any = None
    index = inherited = 0
    for call in rollout_requests(p, warnings=warnings, shared=True):
        assert call.history is not None
        # a ``compacted`` record starts a list of its own: the first call on it is a
        # compaction call (its history is the summary, not what the calls before it sent)
        compaction = history is not None and call.history is not history
        history = call.history
        response_time = parse_time(call.response_time)
        if fork is not None and _before_the_fork(response_time, fork[1]):
            inherited += 1
            continue
        yield Request(
            index,
            SharedHistory(call.body, call.history, call.count, key="input"),
            "openai",
            parse_time(call.time),
            response_time,
            call.usage,
            f"{p}:line {call.line}",
            "main",
            compaction=compaction,
        )
        index += 1
    if fork is not None:
        warnings.append(_inherited(fork[0], inherited))


def _fork(p: Path) -> tuple[str, datetime | None] | None:
    """The task a rollout was forked from, and when the fork began (its ``session_meta``:
    ``forked_from_id`` and ``timestamp``); None for a rollout that is no fork."""
    try:
        with p.open("rb") as handle:
            record = jsonio.loads(handle.readline())
    except (OSError, jsonio.JSONDecodeError):
        return None
    payload = record.get("payload") if jsonio.is_object(record) else None
    if record.get("type") != "session_meta" or not jsonio.is_object(payload):
        return None
    parent = payload.get("forked_from_id")
    if not isinstance(parent, str) or not parent:
        return None
    began = payload.get("timestamp", record.get("timestamp"))
    return parent, parse_time(began if isinstance(began, str) else None)


def _before_the_fork(response_time: datetime | None, began: datetime | None) -> bool:
    """Whether a call was answered before the fork began: a call copied from the parent."""
    return response_time is not None and began is not None and response_time <= began


def _inherited(parent: str, calls: int) -> str:
    """What a forked rollout inherited from its parent, in one line."""
    said = f"forked from task {parent}: the history before the fork is the parent's"
    if calls:
        return (
            f"{said}; {calls} call(s) copied from it into this rollout were billed to the "
            "parent and are not counted here"
        )
    return f"{said} (this rollout holds none of it; its calls send it again, and are counted)"
