"""The API requests a Claude Code session journals: ``api-request*`` records, read back.

Recent Claude Code versions (2.1.2xx and later; undocumented, so read defensively) record the
exact requests they send, once per shape and once per message:

* ``{"type": "api-request-shape", "shapeHash", "shape": {"system": [...], "tools": [...]}}``:
  the system prompt (without the attribution line) and the tool definitions;
* ``{"type": "api-request-blob", "hash", "message": {role, content}}``: one message, keyed by
  the SHA-256 of its JSON with sorted keys, compact separators, UTF-8, ``cache_control``
  removed and string content as the one text block it stands for (Claude Code 2.1.332: a user
  message sent as ``"hello"`` is journaled under the hash of ``[{"type": "text", ...}]``);
* ``{"type": "api-request", "id", "shapeHash", "params": {model, max_tokens, thinking, ...},
  "keep": N, "tail": [hash, ...], "cacheControl": [{"path": [...], "value": {...}}]}``: one
  request, whose messages are the first ``keep`` messages of the request before it plus the
  messages named by ``tail`` (2.1.332 writes ``keep: 0`` and every hash), with breakpoints at
  the ``cacheControl`` paths (``["system", i]`` or ``["messages", i, "content", j]``);
  assistant records name it in ``requestRef``. Only user messages carrying harness text
  (``attachment`` records rendered as ``role: "system"`` messages) get blobs: the others are
  the session's own user and assistant messages.

`read_journal` gives, per request id, the front (system, tools, settings) exactly as sent, and
the messages when every hash resolves (a hash with no blob is looked up among the session's own
messages, as resumed processes journal assistant turns without blobs). What cannot be resolved
is left out rather than guessed: the caller keeps the messages it rebuilt from the records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.transcript._jsonl import JsonlRecord

JOURNAL_TYPES = frozenset({"api-request-shape", "api-request-blob", "api-request"})


@dataclass(frozen=True, slots=True)
class JournaledRequest:
    """One journaled request: its front as sent, and its messages when they resolve."""

    id: str
    system: Sequence[Any] | None
    tools: Sequence[Any] | None
    params: Mapping[str, Any]
    messages: list[Any] | None  # None: some message could not be resolved
    line: int


def message_hash(message: Mapping[str, Any]) -> str:
    """The journal's key of a message: SHA-256 of its canonical JSON without cache_control,
    string content as one text block."""
    canonical = _without_cache_control(message)
    if isinstance(canonical.get("content"), str):
        canonical["content"] = [{"type": "text", "text": canonical["content"]}]
    data = jsonio.dumps(canonical, option=jsonio.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _key(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.removeprefix("sha256:").lower()


def has_journal(records: Iterable[JsonlRecord]) -> bool:
    return any(r.data.get("type") == "api-request" for r in records)


def read_journal(
    records: Sequence[JsonlRecord], known_messages: Iterable[Mapping[str, Any]] = ()
) -> dict[str, JournaledRequest]:
    """Every journaled request by id (``known_messages``: the session's own messages, to
    resolve hashes that have no blob)."""
    shapes: dict[str, Mapping[str, Any]] = {}
    blobs: dict[str, Any] = {}
    for message in known_messages:
        blobs.setdefault(message_hash(message), message)
    out: dict[str, JournaledRequest] = {}
    previous: list[Any] | None = []
    for record in records:
        data = record.data
        kind = data.get("type")
        if kind == "api-request-shape":
            key = _key(data.get("shapeHash"))
            shape = data.get("shape")
            if key is not None and isinstance(shape, Mapping):
                shapes[key] = shape
        elif kind == "api-request-blob":
            key = _key(data.get("hash"))
            if key is not None and isinstance(data.get("message"), Mapping):
                blobs[key] = data["message"]
        elif kind == "api-request" and isinstance(data.get("id"), str):
            shape = shapes.get(_key(data.get("shapeHash")) or "")
            system = _list(shape.get("system")) if shape is not None else None
            messages = _messages(data, previous, blobs)
            marks = data.get("cacheControl")
            if system is not None and _marks(marks, "system"):  # the marks say where, alone
                system = [_without_cache_control(b) for b in system]
                _place_breakpoints({"system": system}, marks, "system")
            if messages is not None:
                _place_breakpoints({"messages": messages}, marks, "messages")
            params = data.get("params")
            out[data["id"]] = JournaledRequest(
                data["id"],
                system,
                _list(shape.get("tools")) if shape is not None else None,
                params if isinstance(params, Mapping) else {},
                messages,
                record.line,
            )
            previous = messages
    return out


def _list(value: Any) -> list[Any] | None:
    return list(value) if isinstance(value, list) else None


def _messages(
    data: Mapping[str, Any], previous: list[Any] | None, blobs: Mapping[str, Any]
) -> list[Any] | None:
    keep, tail = data.get("keep", 0), data.get("tail")
    if isinstance(keep, bool) or not isinstance(keep, int) or not isinstance(tail, list):
        return None
    if keep < 0 or (keep and (previous is None or keep > len(previous))):
        return None
    out = [_without_cache_control(m) for m in (previous or [])[:keep]]
    for item in tail:
        message = blobs.get(_key(item) or "")
        if message is None:
            return None
        out.append(_without_cache_control(message))
    return out or None  # a request with no messages was not sent: nothing resolved


def _marks(marks: Any, layer: str) -> bool:
    return isinstance(marks, list) and any(
        isinstance(m, Mapping) and isinstance(m.get("path"), list) and m["path"][:1] == [layer]
        for m in marks
    )


def _place_breakpoints(root: dict[str, Any], marks: Any, layer: str) -> None:
    """Put each recorded ``cache_control`` of ``layer`` at its path (``["system", i]``,
    ``["messages", i, "content", j]``); paths that do not resolve are skipped."""
    for mark in marks if isinstance(marks, list) else ():
        if not isinstance(mark, Mapping):
            continue
        path, value = mark.get("path"), mark.get("value")
        if not isinstance(path, list) or not path or path[0] != layer:
            continue
        try:
            target: Any = root
            for step in path:
                if (
                    isinstance(target, dict)
                    and step == "content"
                    and isinstance(target.get("content"), str)
                ):
                    target["content"] = [{"type": "text", "text": target["content"]}]
                target = target[step]
            if isinstance(target, dict):
                target["cache_control"] = value
        except (IndexError, KeyError, TypeError):
            continue


__all__ = ["JOURNAL_TYPES", "JournaledRequest", "has_journal", "message_hash", "read_journal"]
