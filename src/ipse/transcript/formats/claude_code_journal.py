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
from dataclasses import dataclass, field
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.transcript._jsonl import JsonlRecord
from ipse.transcript.formats.claude_code import SessionRecord

JOURNAL_TYPES = Names({"api-request-shape", "api-request-blob", "api-request"})


@dataclass(frozen=True, slots=True)
class JournaledRequest:
    """One journaled request: its front as sent, and its messages when they resolve.

    The messages are ``history[:count]`` (``cache_control`` removed; one list shared by the
    requests that extend each other) with ``marks`` (the request's ``cacheControl`` entries on
    messages) placed on them; ``breakpoints`` says the same as (message, block, value) when
    every mark is a plain one on a content block, else None. `messages` builds the list as
    sent."""

    id: str
    system: Sequence[Any] | None
    tools: Sequence[Any] | None
    params: Mapping[str, Any]
    history: list[Any] | None  # None: some message could not be resolved
    line: int
    count: int = 0
    marks: tuple[Any, ...] = ()
    breakpoints: tuple[tuple[int, int, Mapping[str, Any]], ...] | None = ()
    # messages an earlier request's marks changed (a string content made a list) and kept so:
    # index -> [(journal position of the change, the message without cache_control)]
    changed: Mapping[int, list[tuple[int, Any]]] = field(default_factory=dict)
    ordinal: int = 0

    def sent(self, i: int) -> Any:
        """Message ``i`` as this request sent it, before its own marks."""
        for ordinal, message in reversed(self.changed.get(i, ())):
            if ordinal < self.ordinal:
                return message
        return self.history[i] if self.history is not None else None

    @property
    def messages(self) -> list[Any] | None:
        """The messages as sent, breakpoints placed (a new list each call)."""
        if self.history is None:
            return None
        out = list(self.history[: self.count])
        for i in self.changed:
            if i < self.count:
                out[i] = self.sent(i)
        for i, message in _placed(out, self.count, self.marks).items():
            out[i] = message
        return out


def _placed(history: Sequence[Any], count: int, marks: Sequence[Any]) -> dict[int, Any]:
    """The messages of ``history[:count]`` that ``marks`` reach, copied, marks placed."""
    copies: dict[int, Any] = {}
    sparse: dict[Any, Any] = {}  # by the index as the path spells it (-1, True, ...)
    for mark in marks:
        path = mark.get("path") if isinstance(mark, Mapping) else None
        if not (isinstance(path, list) and len(path) > 1 and isinstance(path[1], int)):
            continue
        i = path[1] + count if path[1] < 0 else int(path[1])
        if 0 <= i < count:
            if i not in copies:
                copies[i] = _without_cache_control(history[i])
            sparse[path[1]] = copies[i]
    if copies:
        _place_breakpoints({"messages": sparse}, list(marks), "messages")
    return copies


def message_hash(message: Mapping[str, Any]) -> str:
    """The journal's key of a message: SHA-256 of its canonical JSON without cache_control,
    string content as one text block."""
    canonical = _without_cache_control(message)
    if isinstance(canonical.get("content"), str):
        canonical["content"] = [{"type": "text", "text": canonical["content"]}]
    data = jsonio.dumps(canonical, option=jsonio.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()


# Values copied as they are (checked by exact type: most of a message is these).
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _without_cache_control(value: Any) -> Any:
    """A copy of ``value`` with every ``cache_control`` key removed, at any depth."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        return {
            k: v if type(v) in _LEAVES else _without_cache_control(v)
            for k, v in value.items()
            if k != "cache_control"
        }
    if isinstance(value, list):
        return [v if type(v) in _LEAVES else _without_cache_control(v) for v in value]
    return value


def _key(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.removeprefix("sha256:").lower()


def has_journal(records: Iterable[SessionRecord]) -> bool:
    return any(r.kind == "api-request" for r in records)


def read_journal(
    records: Sequence[JsonlRecord] | Sequence[SessionRecord],
    known_messages: Iterable[Mapping[str, Any]] = (),
) -> dict[str, JournaledRequest]:
    """Every journaled request by id (``known_messages``: the session's own messages, to
    resolve hashes that have no blob)."""
    shapes: dict[str, Mapping[str, Any]] = {}
    fronts: dict[str, tuple[Mapping[str, Any], list[Any] | None, list[Any] | None]] = {}
    systems: dict[bytes, list[Any]] = {}  # one object per distinct marked system prompt
    # (the system list, its marks' JSON) -> the system list, the prompt those marks place:
    # most requests mark the same blocks, and copying a long prompt per request adds up
    placed: dict[tuple[int, bytes], tuple[list[Any], list[Any]]] = {}
    blobs: dict[str, Any] = {}
    for message in known_messages:
        blobs.setdefault(message_hash(message), message)
    stripped: dict[str, Any] = {}  # key -> the message without cache_control (one object)
    out: dict[str, JournaledRequest] = {}
    previous: tuple[list[Any], int] | None = ([], 0)
    changed: dict[int, list[tuple[int, Any]]] = {}  # shared by requests that keep messages
    top = -1  # the highest message index in `changed` (-1: none), so that a request that
    # keeps them all is known to without a pass over them (that pass made long journals
    # quadratic)
    ordinal = 0
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
                stripped.pop(key, None)
        elif kind == "api-request" and isinstance(data.get("id"), str):
            shape_key = _key(data.get("shapeHash")) or ""
            shape = shapes.get(shape_key)
            system: list[Any] | None = None
            tools: list[Any] | None = None
            if shape is not None:
                front = fronts.get(shape_key)
                if front is None or front[0] is not shape:  # one list per shape, not per request
                    front = (shape, _list(shape.get("system")), _list(shape.get("tools")))
                    fronts[shape_key] = front
                system, tools = front[1], front[2]
            ordinal += 1
            history = _history(data, previous, blobs, stripped)
            keep = data.get("keep", 0)
            if history is None or not changed:
                pass
            elif not keep:
                changed, top = {}, -1
            elif top >= keep:  # only the kept messages stay changed
                changed = {i: v for i, v in changed.items() if i < keep}
                top = max(changed, default=-1)
            marks = data.get("cacheControl")
            if system is not None and isinstance(marks, list) and _marks(marks, "system"):
                system = _marked_system(system, marks, placed, systems)  # (where, alone)
            message_marks: tuple[Any, ...] = ()
            breakpoints: tuple[tuple[int, int, Mapping[str, Any]], ...] | None = ()
            if history is not None and _marks(marks, "messages"):
                message_marks = tuple(
                    m
                    for m in marks or ()
                    if isinstance(m, Mapping)
                    and isinstance(m.get("path"), list)
                    and m["path"][:1] == ["messages"]
                )
            params = data.get("params")
            request = out[data["id"]] = JournaledRequest(
                data["id"],
                system,
                tools,
                params if isinstance(params, Mapping) else {},
                history[0] if history is not None else None,
                record.line,
                history[1] if history is not None else 0,
                message_marks,
                breakpoints,
                changed,
                ordinal,
            )
            if message_marks:
                assert history is not None
                sent = _Sent(request)
                object.__setattr__(
                    request, "breakpoints", _plain_breakpoints(message_marks, sent, history[1])
                )
                # placing a mark on a string content makes it a list, and a later request
                # that keeps the message keeps it as this one sent it
                for i, message in _placed(sent, history[1], message_marks).items():
                    plain = _without_cache_control(message)
                    if plain != sent[i]:
                        changed.setdefault(i, []).append((ordinal, plain))
                        top = max(top, i)
            previous = history
    return out


def _marked_system(
    system: list[Any],
    marks: list[Any],
    placed: dict[tuple[int, bytes], tuple[list[Any], list[Any]]],
    systems: dict[bytes, list[Any]],
) -> list[Any]:
    """``system`` (a shape's prompt) with the request's system marks placed: one list per
    distinct prompt as marked, built once for each prompt and set of marks."""
    own = [m for m in marks if isinstance(m, Mapping) and _layer(m) == "system"]
    key = (id(system), jsonio.dumps(own))
    known = placed.get(key)
    if known is not None and known[0] is system:
        return known[1]
    marked = [_without_cache_control(b) for b in system]
    _place_breakpoints({"system": marked}, own, "system")
    marked = systems.setdefault(jsonio.dumps(marked), marked)
    placed[key] = (system, marked)
    return marked


def _layer(mark: Mapping[str, Any]) -> Any:
    path = mark.get("path")
    return path[0] if isinstance(path, list) and path else None


def _history(
    data: Mapping[str, Any],
    previous: tuple[list[Any], int] | None,
    blobs: Mapping[str, Any],
    stripped: dict[str, Any],
) -> tuple[list[Any], int] | None:
    """The request's messages without ``cache_control`` as ``(list, count)``: the previous
    request's list when they extend it (appended to), else a new list; None: unresolved.

    The cost is the record's own length: kept messages are the previous list's, and each tail
    message is compared by identity with the one at its place (each blob is stripped once)."""
    keep, tail = data.get("keep", 0), data.get("tail")
    if isinstance(keep, bool) or not isinstance(keep, int) or not isinstance(tail, list):
        return None
    if keep < 0 or (keep and (previous is None or keep > previous[1])):
        return None
    messages: list[Any] = []
    for item in tail:
        key = _key(item) or ""
        message = stripped.get(key)
        if message is None:
            blob = blobs.get(key)
            if blob is None:
                return None
            message = stripped[key] = _without_cache_control(blob)
        messages.append(message)
    if not keep and not messages:
        return None  # a request with no messages was not sent: nothing resolved
    base = previous[0] if previous is not None else []
    at = keep
    n = 0
    while n < len(messages) and at < len(base) and base[at] is messages[n]:
        at += 1
        n += 1
    if n == len(messages):
        return base, at
    if at == len(base):
        base.extend(messages[n:])
        return base, len(base)
    return [*base[:at], *messages[n:]], at + len(messages) - n


class _Sent(Sequence[Any]):
    """A request's messages as it sent them before its own marks (read index by index)."""

    def __init__(self, request: JournaledRequest) -> None:
        self._request = request

    def __len__(self) -> int:
        return self._request.count

    def __getitem__(self, i: Any) -> Any:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError("an index")
        if i < 0:
            i += self._request.count
        if not 0 <= i < self._request.count:
            raise IndexError(i)
        return self._request.sent(i)


def _plain_breakpoints(
    marks: Sequence[Any], history: Sequence[Any], count: int
) -> tuple[tuple[int, int, Mapping[str, Any]], ...] | None:
    """The marks as (message, block, value) when each is a plain ``["messages", i,
    "content", j]`` on a block object (marks that place nothing are left out; an index
    counted from the end, ``-1``, is read as it places); None when some mark is of another
    kind (the messages are then built as sent, a copy per request)."""
    out: list[tuple[int, int, Mapping[str, Any]]] = []
    for mark in marks:
        path, value = mark["path"], mark.get("value")
        if not isinstance(value, dict) or len(path) != 4 or path[2] != "content":
            return None
        i, j = path[1], path[3]
        if type(i) is not int or type(j) is not int:
            return None
        if i < 0:
            i += count
        if not 0 <= i < count:
            continue  # no such message: the mark places nothing
        message = history[i]
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if isinstance(content, str):
            if j not in (0, -1):
                return None  # the string would become a list, and nothing placed
            out.append((i, 0, value))
        elif isinstance(content, list):
            if j < 0:
                j += len(content)
            if 0 <= j < len(content):
                if not isinstance(content[j], dict):
                    return None
                out.append((i, j, value))
        else:
            return None
    return tuple(out)


def _list(value: Any) -> list[Any] | None:
    return list(value) if isinstance(value, list) else None


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
