"""OpenAI Codex CLI rollout files (JSONL of ``{timestamp, type, payload}``), read only.

The conversation is in the ``response_item`` records: Responses API input items, read by the
Responses codec (`ipse.transcript._formats.openai_responses`), so a rollout's conversation is an
``openai-responses`` conversation and writes out as a Responses request body. ``session_meta``
gives the instructions (``base_instructions``) and the session id (``meta["session"]``, the id
Codex also sends as its ``session-id`` header), ``turn_context`` the model. Codex sent the
instructions as the request's ``instructions`` until it began to send them as a developer
message at the head of ``input`` (0.169 does, and records that message among the items): where
a developer message of the history holds them, they are not added again; ``event_msg``
records repeat what the items hold and are skipped, except ``token_count``, whose
``last_token_usage`` is the usage of the request just answered, and ``user_message``, which
marks the user message item a human typed: user message items with no such event (the
instructions Codex re-injects, ``AGENTS.md`` contents, environment context) are the harness
speaking, and so are the user messages a ``compacted`` record replays. A ``compacted`` record
replaces the history with its ``replacement_history``: it starts a new segment, as a compaction
boundary does in a Claude Code session. The older format without the envelope (bare items, one
per line) is read the same way: its header line (``{id, timestamp, instructions}``) gives the
instructions, its ``record_type`` lines are skipped, and user messages are classified by their
text alone (it has no events).

`rollout_requests` rebuilds the request of every model call: the instructions and every item
before the first item of its response, with the recorded usage. Tool definitions are not
recorded in a rollout; neither request bodies nor conversations have them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.transcript._formats.openai_responses import read_items, side_of
from ipse.transcript._jsonl import JsonlRecord, read_jsonl
from ipse.transcript._links import check_links
from ipse.transcript._model import Conversation, Message, Origin, Text
from ipse.transcript._thread import Segment, Thread


@dataclass(frozen=True, slots=True)
class RolloutRequest:
    """One model call of a rollout: the Responses body it sent, and what was recorded of it."""

    body: Mapping[str, Any]
    usage: Mapping[str, Any] | None  # Responses usage (input_tokens_details.cached_tokens)
    time: str | None  # timestamp of the record before the response
    response_time: str | None  # timestamp of the response's first item
    line: int
    # shared=True: the body has no ``input``; it is ``history[:count]`` (one list for all calls)
    history: list[Mapping[str, Any]] | None = None
    count: int = 0


def _records(path: Path, skip_bad_lines: bool, warnings: list[str] | None) -> list[JsonlRecord]:
    records = list(read_jsonl(path, skip_bad_lines=skip_bad_lines, warnings=warnings))
    if not records:
        raise InputError("no records in the rollout file", path=path)
    return records


def read_rollout(
    path: str | Path, *, skip_bad_lines: bool = False, warnings: list[str] | None = None
) -> Thread:
    """A rollout file as one thread, cut into segments at ``compacted`` records."""
    p = Path(path)
    rollout = _Rollout()
    for record in _records(p, skip_bad_lines, warnings):
        rollout.add(record)
    rollout.typed.finish()
    segments = rollout.segments
    if not segments[0][1] and len(segments) > 1:
        segments.pop(0)
    known: set[str] = set()
    built = []
    for number, (boundary, lined) in enumerate(segments):
        items = [item for _, item in lined]
        messages = read_items(items, source=str(p), lines=[line for line, _ in lined])
        messages = [rollout.typed.classify(m) for m in messages]
        check_links(messages, path=p, known=known)
        meta = {"format": "codex", "path": str(p), "thread": "main", "segment": number}
        meta["boundary"] = boundary
        if rollout.session:
            meta["session"] = rollout.session
        system = rollout.system(items)
        conversation = Conversation(
            messages=tuple(messages),
            system=system,
            system_form="string" if system else "none",
            settings={"model": rollout.model} if rollout.model else {},
            dialect="openai-responses",
            meta=meta,
        )
        built.append(Segment(conversation, boundary))
    return Thread("main", tuple(built), str(p))


class _Rollout:
    """What reading a rollout's records gathers: the items of each segment (a ``compacted``
    record starts one), the model, the instructions, the session id, the typed user messages."""

    def __init__(self) -> None:
        self.segments: list[
            tuple[Mapping[str, Any] | None, list[tuple[int, Mapping[str, Any]]]]
        ] = [(None, [])]
        self.model: str | None = None
        self.instructions: str | None = None
        self.session: str | None = None  # the session_meta id: Codex's session-id header too
        self.typed = _TypedUsers()

    def add(self, record: JsonlRecord) -> None:
        kind, payload = _unwrap(record)
        if kind == "session_meta":
            self.instructions = _instructions(payload) or self.instructions
            if isinstance(payload.get("id"), str):
                self.session = self.session or payload["id"]
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            self.model = payload["model"]
        elif kind == "compacted":
            history = payload.get("replacement_history") or []
            items = [(record.line, item) for item in history if isinstance(item, Mapping)]
            self.typed.replayed.update(id(item) for _, item in items)
            self.segments.append((dict(record.data), items))
        elif kind == "response_item":
            self.segments[-1][1].append((record.line, payload))
            self.typed.item(payload)
        elif kind == "event_msg" and payload.get("type") == "user_message":
            self.typed.event(payload)

    def system(self, items: Sequence[Mapping[str, Any]]) -> tuple[Text, ...]:
        """The system prompt of a segment: the instructions, unless a developer message of
        its items holds them (sent in ``input``, not as ``instructions``)."""
        if self.instructions is None or any(_holds(item, self.instructions) for item in items):
            return ()
        return (Text(self.instructions, Origin.SYSTEM),)


class _TypedUsers:
    """Which user message items a human typed: those a ``user_message`` event goes with.

    Codex writes the item and the event side by side, in either order, within one turn (before
    the model answers). An event goes with the user item of its turn whose text it repeats, else
    with the turn's latest user item (an event written first waits for it). Items with no event,
    and every item a ``compacted`` record replays, are the harness speaking. A rollout with no
    ``user_message`` events at all (the older format) leaves the text's own markers to decide."""

    def __init__(self) -> None:
        self.human: set[int] = set()
        self.replayed: set[int] = set()
        self.events = 0
        self._unpaired: list[tuple[int, str]] = []  # this turn's user items: (id, text)
        self._pending: list[str | None] = []  # this turn's events still waiting for an item

    def item(self, payload: Mapping[str, Any]) -> None:
        if side_of(payload) == "assistant":  # the model answers: the turn's pairing is over
            for _ in self._pending:
                if self._unpaired:
                    self.human.add(self._unpaired.pop()[0])
            self._unpaired, self._pending = [], []
            return
        if not _is_user_message(payload):
            return
        text = _item_text(payload)
        for n, waiting in enumerate(self._pending):
            if waiting == text:
                self.human.add(id(payload))
                del self._pending[n]
                return
        self._unpaired.append((id(payload), text))

    def event(self, payload: Mapping[str, Any]) -> None:
        self.events += 1
        message = payload.get("message")
        text = message if isinstance(message, str) else None
        for n, (item, item_text) in enumerate(self._unpaired):
            if item_text == text:
                self.human.add(item)
                del self._unpaired[n]
                return
        if self._unpaired and not self._pending and text is None:
            self.human.add(self._unpaired.pop()[0])
            return
        self._pending.append(text)

    def finish(self) -> None:
        self.item({"type": "reasoning"})  # the end of the file ends the last turn

    def classify(self, message: Message) -> Message:
        items: Sequence[Mapping[str, Any]] = message.meta.get("items") or ()
        if message.role != "user" or len(items) != 1 or not _is_user_message(items[0]):
            return message
        item = items[0]
        replayed = id(item) in self.replayed
        if id(item) in self.human or not (replayed or self.events):
            return message
        blocks = tuple(
            Text(b.text, Origin.HARNESS, b.raw) if isinstance(b, Text) else b
            for b in message.blocks
        )
        meta = {**message.meta, "blocks": blocks}
        if replayed:
            meta["replayed"] = True
        return Message(message.role, blocks, message.content_form, message.raw, meta)


def _item_text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and "text" in p)


def _is_user_message(item: Mapping[str, Any]) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def rollout_requests(
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    warnings: list[str] | None = None,
    shared: bool = False,
) -> Iterator[RolloutRequest]:
    """The request of every model call, in order, with its recorded usage when there is one.

    ``shared``: each body leaves out ``input``, and ``history[:count]`` stands for it, one
    append-only list for all the calls up to a compaction (no copy per call: a long rollout
    costs its size, not its size times its calls)."""
    p = Path(path)
    state = _Replay(shared)
    for record in _records(p, skip_bad_lines, warnings):
        kind, payload = _unwrap(record)
        if kind == "session_meta":
            state.instruct(_instructions(payload) or state.instructions)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            state.model = payload["model"]
        elif kind == "compacted":
            history = payload.get("replacement_history") or []
            state.replace([item for item in history if isinstance(item, Mapping)])
        elif kind == "response_item":
            yield from state.item(record, payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            state.usage(payload.get("info"))
        state.last_time = _time(record)
    yield from state.flush()


class _Replay:
    """The history as the model saw it, replayed record by record."""

    def __init__(self, shared: bool = False) -> None:
        self.shared = shared
        self.items: list[Mapping[str, Any]] = []
        self.model: str | None = None
        self.instructions: str | None = None
        self.answering = False
        self.last_time: str | None = None
        self.pending: dict[str, Any] | None = None
        self.total: Any = None
        self.in_input = False  # a developer message of ``items`` holds the instructions

    def instruct(self, instructions: str | None) -> None:
        self.instructions = instructions
        self.in_input = instructions is not None and any(
            _holds(item, instructions) for item in self.items
        )

    def replace(self, items: list[Mapping[str, Any]]) -> None:
        """A compaction: the history starts again from ``items``."""
        self.items = items
        self.answering = False
        self.instruct(self.instructions)

    def item(self, record: JsonlRecord, item: Mapping[str, Any]) -> Iterator[RolloutRequest]:
        if side_of(item) == "assistant":
            if not self.answering:
                yield from self.flush()
                body: dict[str, Any] = {}
                if self.model is not None:
                    body["model"] = self.model
                if self.instructions is not None and not self.in_input:
                    body["instructions"] = self.instructions
                if not self.shared:
                    body["input"] = list(self.items)
                self.pending = {
                    "history": self.items if self.shared else None,
                    "count": len(self.items),
                    "body": body,
                    "usage": None,
                    "time": self.last_time,
                    "response_time": _time(record),
                    "line": record.line,
                }
            self.answering = True
        else:
            self.answering = False
            if self.instructions is not None and not self.in_input:
                self.in_input = _holds(item, self.instructions)
        self.items.append(item)

    def usage(self, info: Any) -> None:
        if not isinstance(info, Mapping) or self.pending is None:
            return
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total == self.total or not isinstance(last, Mapping):
            return  # a repeat of the previous count
        self.total = total
        if self.pending["usage"] is None:
            self.pending["usage"] = _responses_usage(last)

    def flush(self) -> Iterator[RolloutRequest]:
        if self.pending is not None:
            yield RolloutRequest(**self.pending)
            self.pending = None


def _responses_usage(last: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "input_tokens": last.get("input_tokens"),
        "input_tokens_details": {"cached_tokens": last.get("cached_input_tokens")},
        "output_tokens": last.get("output_tokens"),
    }


def _time(record: JsonlRecord) -> str | None:
    value = record.data.get("timestamp")
    return value if isinstance(value, str) else None


def _instructions(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("base_instructions", payload.get("instructions"))
    if isinstance(value, Mapping):
        value = value.get("text")
    return value if isinstance(value, str) else None


def _holds(item: Mapping[str, Any], instructions: str) -> bool:
    """Whether ``item`` is a developer (or system) message whose text is ``instructions``."""
    if item.get("type", "message") != "message" or item.get("role") not in ("developer", "system"):
        return False
    content = item.get("content")
    if isinstance(content, str):
        return content == instructions
    parts = content if isinstance(content, list) else []
    return any(isinstance(p, Mapping) and p.get("text") == instructions for p in parts)


def _unwrap(record: JsonlRecord) -> tuple[str, Mapping[str, Any]]:
    data = record.data
    payload = data.get("payload")
    if isinstance(payload, Mapping) and isinstance(data.get("type"), str):
        return data["type"], payload
    if "type" not in data and "role" not in data:
        # The older format's header ({id, timestamp, instructions}) and its state lines
        # ({"record_type": "state"}) are not items.
        return ("state" if "record_type" in data else "session_meta"), data
    return "response_item", data  # the older format: bare items
