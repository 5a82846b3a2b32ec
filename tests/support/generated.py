"""Generated Claude Code sessions that journal their API requests, and Codex rollouts.

Shared by the prefix tests (small, shaped by hypothesis) and `bench/bigjournal.py` (large);
and long sessions chained from copies of one (`chained_session`: the tests' and
`bench/bigsession.py`'s).
A journaled session has the records Claude Code 2.1.332 writes (REFERENCE.md,
`ipse.transcript._formats.claude_code_journal`): ``api-request-shape`` once per shape,
``api-request-blob`` once per message, then per model call an ``api-request`` naming the
messages it sent (``keep: 0`` and every hash, or ``keep: N`` and the new ones) and its
breakpoints (``cacheControl``), and the assistant record naming it in ``requestRef``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ipse.transcript._formats.claude_code_journal import message_hash

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SESSION = "0a0b0c0d-0000-4000-8000-000000000001"


def _time(step: int) -> str:
    return (
        (START + timedelta(seconds=7 * step))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _uuid(n: int) -> str:
    return f"0a0b0c0d-0000-4000-8000-{n:012x}"


@dataclass
class Turn:
    """One model call: the user's (or tool results') message, the answer, and how the
    journal records the request (``mode``: ``full`` keep 0 and every hash, ``delta`` keep
    the previous request's messages, ``unknown`` a hash with no blob, ``rewind`` drop the
    last two messages first, ``edit`` keep all but the last message of the request before
    and send that one again, changed)."""

    text: str
    tool: bool = False
    mode: str = "full"
    marks: list[list[Any]] = field(default_factory=list)  # extra cacheControl paths
    ttl: str | None = None
    shape: int = 0
    system_mark: bool = True
    blob: bool = True  # journal the user message as a blob (else resolved from the records)


def journaled_records(turns: list[Turn], *, size: int = 0) -> Iterator[dict[str, Any]]:
    """The records of a session with these turns (``size``: bytes of filler per tool result)."""
    filler = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    shapes: set[int] = set()
    blobs: set[str] = set()
    sent: list[dict[str, Any]] = []  # the messages of the previous request
    sent_hashes: list[str] = []
    parent: str | None = None
    n = 0
    for t, turn in enumerate(turns):
        n += 1
        if turn.tool and sent and sent[-1]["role"] == "assistant":
            call = sent[-1]["content"][-1]
            content: Any = [
                {"type": "tool_result", "tool_use_id": call["id"], "content": turn.text + filler}
            ]
        else:
            content = turn.text if t % 3 == 0 else [{"type": "text", "text": turn.text}]
        user = {"role": "user", "content": content}
        yield {
            "parentUuid": parent,
            "isSidechain": False,
            "type": "user",
            "message": user,
            "uuid": _uuid(n),
            "timestamp": _time(n),
            "sessionId": SESSION,
            "version": "2.1.332",
        }
        parent = _uuid(n)
        messages = [*sent, user]
        hashes = [*sent_hashes, message_hash(user)]
        if turn.mode == "rewind" and len(messages) > 3:
            messages = [*messages[:-3], user]
            hashes = [*hashes[:-3], hashes[-1]]
        edit = turn.mode == "edit" and len(sent) >= 2
        if edit:  # the last message of the request before, sent again changed
            edited = {"role": sent[-2]["role"], "content": f"edited {t}: {turn.text}"}
            messages = [*sent[:-2], edited, sent[-1], user]
            hashes = [*sent_hashes[:-2], message_hash(edited), sent_hashes[-1], hashes[-1]]
        if turn.shape not in shapes:
            shapes.add(turn.shape)
            yield {
                "type": "api-request-shape",
                "shapeHash": f"shape{turn.shape}",
                "shape": {
                    "system": [
                        {"type": "text", "text": f"You are agent {turn.shape}."},
                        {"type": "text", "text": "Be brief. " * 40},
                    ],
                    "tools": [
                        {
                            "name": "Bash",
                            "description": "Run a command " * 10,
                            "input_schema": {"type": "object"},
                        },
                        {
                            "name": f"Tool{turn.shape}",
                            "description": "x",
                            "input_schema": {"type": "object"},
                        },
                    ],
                },
            }
        for h, m in zip(hashes, messages, strict=True):
            if h not in blobs and (m is not user or turn.blob):
                blobs.add(h)
                yield {"type": "api-request-blob", "hash": h, "message": m}
        keep, tail = 0, hashes
        if turn.mode == "delta":
            keep = max(0, len(sent) - 1)
            tail = hashes[keep:]
        elif edit:
            keep = len(sent) - 2
            tail = hashes[keep:]
        elif turn.mode == "unknown":
            tail = [*hashes[:-1], hashlib.sha256(turn.text.encode()).hexdigest()]
        last = messages[-1]["content"]
        marker: dict[str, Any] = {"type": "ephemeral"}
        if turn.ttl:
            marker["ttl"] = turn.ttl
        marks: list[dict[str, Any]] = [
            {
                "path": [
                    "messages",
                    len(messages) - 1,
                    "content",
                    0 if isinstance(last, str) else len(last) - 1,
                ],
                "value": marker,
            },
        ]
        if turn.system_mark:
            marks.insert(0, {"path": ["system", 1], "value": {"type": "ephemeral", "ttl": "1h"}})
        marks += [{"path": path, "value": {"type": "ephemeral"}} for path in turn.marks]
        ref = f"req_{t:06d}"
        yield {
            "type": "api-request",
            "id": ref,
            "shapeHash": f"shape{turn.shape}",
            "params": {
                "model": "claude-sonnet-4-5",
                "max_tokens": 32000,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
            },
            "keep": keep,
            "tail": tail,
            "cacheControl": marks,
        }
        n += 1
        answer: list[dict[str, Any]] = [{"type": "text", "text": f"Answer {t}: {turn.text}"}]
        if t + 1 < len(turns) and turns[t + 1].tool:
            answer.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{t:06d}",
                    "name": "Bash",
                    "input": {"command": f"echo {t}"},
                }
            )
        yield {
            "parentUuid": parent,
            "isSidechain": False,
            "type": "assistant",
            "message": {
                "model": "claude-sonnet-4-5",
                "id": f"msg_{t:06d}",
                "type": "message",
                "role": "assistant",
                "content": answer,
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": 3 + t,
                    "cache_read_input_tokens": 100 * t,
                    "cache_creation_input_tokens": 50,
                    "output_tokens": 9,
                },
            },
            "requestRef": ref,
            "uuid": _uuid(n),
            "timestamp": _time(n),
            "sessionId": SESSION,
            "version": "2.1.332",
        }
        parent = _uuid(n)
        reply = {"role": "assistant", "content": answer}
        sent = [*messages, reply]
        sent_hashes = [*hashes, message_hash(reply)]


def rollout_records(
    calls: int, *, size: int = 0, compact_every: int = 0, pauses: tuple[int, ...] = (0,)
) -> Iterator[dict[str, Any]]:
    """A Codex rollout of ``calls`` model calls, each a function call and its output
    (``size`` bytes of output), with token counts; ``compact_every``: a compaction every so
    many calls."""
    filler = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    step = 0
    idle = 0.0  # seconds of pauses so far (``pauses``: before each call, cycled)

    def rec(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        nonlocal step
        step += 1
        when = START + timedelta(seconds=7 * step + idle)
        stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {"timestamp": stamp, "type": kind, "payload": payload}

    yield rec("session_meta", {"id": SESSION, "base_instructions": {"text": "Be a coder. " * 50}})
    yield rec("turn_context", {"model": "gpt-5-codex"})
    yield rec(
        "response_item",
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "rules " * 30}],
        },
    )
    yield rec(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "fix the bug"}],
        },
    )
    total = 0
    for c in range(calls):
        idle += pauses[c % len(pauses)]
        if compact_every and c and c % compact_every == 0:
            yield rec(
                "compacted",
                {
                    "message": "summary",
                    "replacement_history": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": f"summary {c}"}],
                        }
                    ],
                },
            )
        yield rec(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"think {c}"}],
                "encrypted_content": "e" * 40,
            },
        )
        yield rec(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": orjson.dumps({"cmd": f"ls {c}"}).decode(),
                "call_id": f"call_{c}",
            },
        )
        total += 1000 + 50 * c
        yield rec(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": {"input_tokens": total},
                    "last_token_usage": {
                        "input_tokens": 1000 + 50 * c,
                        "cached_input_tokens": 900 + 40 * c,
                        "output_tokens": 20,
                    },
                },
            },
        )
        yield rec(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": f"call_{c}",
                "output": f"out {c} " + filler,
            },
        )
        if c % 5 == 4:
            yield rec(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"next {c}"}],
                },
            )
    yield rec(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done"}],
        },
    )


# ------------------------------------------------------------------- long sessions, chained

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_KEEP = frozenset({"sessionId"})


def _remap(value: Any, copy: int, shift: timedelta, key: str = "") -> Any:
    """A record of copy ``copy``: ids made unique to the copy, times shifted."""
    if isinstance(value, dict):
        return {k: _remap(v, copy, shift, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_remap(v, copy, shift, key) for v in value]
    if not isinstance(value, str) or key in _KEEP or copy == 0:
        return value
    if key == "timestamp":
        when = datetime.fromisoformat(value.replace("Z", "+00:00")) + shift
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if _UUID.match(value):
        return f"{value[:24]}{int(value[24:], 16) ^ copy:012x}"
    if value.startswith(("toolu_", "msg_", "req_")):
        return f"{value}_{copy}"
    return value


def _source_records(
    source: Path, keep_compactions: bool
) -> tuple[list[dict[str, Any]], str, str, timedelta]:
    """A session's records, its live root and last uuid, and its time span."""
    records = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    if not keep_compactions:  # as the reader links them: the logical parent, else the record before
        previous = None
        for record in records:
            if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
                logical = record.get("logicalParentUuid")
                record["subtype"] = "informational"
                record["parentUuid"] = logical if logical in by_uuid else previous
            if isinstance(record.get("uuid"), str):
                previous = record["uuid"]
    last = [r for r in records if isinstance(r.get("uuid"), str)][-1]
    current = last
    while True:
        parent = current.get("parentUuid")
        if not isinstance(parent, str) or parent not in by_uuid:
            break
        current = by_uuid[parent]
    times = [
        datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
        for r in records
        if isinstance(r.get("timestamp"), str)
    ]
    span = max(times) - min(times) + timedelta(minutes=10)
    return records, current["uuid"], last["uuid"], span


def chained_session(
    path: Path, megabytes: float, source: Path, *, keep_compactions: bool = False
) -> Path:
    """A Claude Code session file of at least ``megabytes`` MB: copies of the session at
    ``source`` chained into one long thread, each copy's ids made its own, its times shifted
    after the copy before, its root hung under that copy's last record (the whole file is one
    conversation, as a long-running session writes it). ``keep_compactions``: each copy keeps
    its compaction boundaries (by default they become plain records: one segment, every turn
    a request with the whole history before it)."""
    records, root, last, span = _source_records(source, keep_compactions)
    target = int(megabytes * 1_000_000)
    written = 0
    copy = 0
    with path.open("wb") as out:
        while written < target:
            for record in records:
                new = _remap(record, copy, span * copy)
                if copy and record.get("uuid") == root:
                    new["parentUuid"] = _remap(last, copy - 1, span)
                line = orjson.dumps(new) + b"\n"
                out.write(line)
                written += len(line)
            copy += 1
    return path


def write_jsonl(path: Any, records: Iterator[dict[str, Any]]) -> None:
    with open(path, "wb") as out:
        for record in records:
            out.write(orjson.dumps(record) + b"\n")
