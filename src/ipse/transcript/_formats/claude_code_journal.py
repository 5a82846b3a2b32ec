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

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.transcript._formats.claude_code_tree import SessionRecord
from ipse.transcript._jsonl import JsonlRecord


@dataclass(frozen=True, slots=True)
class JournaledRequest:
    """One journaled request: its front as sent, and its messages when they resolve.

    The messages are ``history[:count]`` (``cache_control`` removed; one list shared by the
    requests that extend each other), then ``tail`` (the messages a later request cut from the
    shared list, `_history`), with ``marks`` (the request's ``cacheControl`` entries on
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
    # messages an earlier request's marks changed (a string content made a list) and kept so,
    # in one log for the whole journal (`_Changes`), read at this request's place in it
    changes: _Changes | None = None
    ordinal: int = 0
    tail: tuple[Any, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether some message this request sent is one an earlier request's mark changed."""
        return self.changes is not None and self.changes.any_at(self.ordinal)

    @property
    def size(self) -> int:
        """How many messages the request sent."""
        return self.count + len(self.tail)

    def sent(self, i: int) -> Any:
        """Message ``i`` as this request sent it, before its own marks."""
        if self.changes is not None and i in self.changes.events:
            changed = self.changes.at(i, self.ordinal)
            if changed is not None:
                return changed
        if self.history is None:
            return None
        return self.history[i] if i < self.count else self.tail[i - self.count]

    def message(self, i: int) -> Any:
        """Message ``i`` as sent, its breakpoints placed (the others not built)."""
        return _placed(_Sent(self), self.size, self.marks).get(i, self.sent(i))

    @property
    def messages(self) -> list[Any] | None:
        """The messages as sent, breakpoints placed (a new list each call)."""
        if self.history is None:
            return None
        out = self.history[: self.count]
        out.extend(self.tail)
        if self.changes is not None:
            for i in self.changes.indices(len(out)):
                out[i] = self.sent(i)
        for i, message in _placed(out, len(out), self.marks).items():
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
    import hashlib  # (here: a session without a journal never hashes a message)

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


def read_journal(
    records: Sequence[JsonlRecord] | Sequence[SessionRecord],
    known_messages: Iterable[Mapping[str, Any]] = (),
) -> dict[str, JournaledRequest]:
    """Every journaled request by id (``known_messages``: the session's own messages, to
    resolve hashes that have no blob)."""
    reader = _JournalReader(known_messages)
    for record in records:
        data = record.data
        kind = data.get("type")
        if kind == "api-request-shape":
            reader.shape(data)
        elif kind == "api-request-blob":
            reader.blob(data)
        elif kind == "api-request" and isinstance(data.get("id"), str):
            reader.request(data, record.line)
    return reader.out


class _JournalReader:
    """The state `read_journal` keeps between records: the shapes and blobs seen so far, the
    previous request's message list and the requests that view it, and the changes to
    messages that later requests keep."""

    def __init__(self, known_messages: Iterable[Mapping[str, Any]]) -> None:
        self.shapes: dict[str, Mapping[str, Any]] = {}
        self.fronts: dict[str, tuple[Mapping[str, Any], list[Any] | None, list[Any] | None]] = {}
        self.systems: dict[bytes, list[Any]] = {}  # one object per distinct marked system prompt
        # (the system list, its marks' JSON) -> the system list, the prompt those marks place:
        # most requests mark the same blocks, and copying a long prompt per request adds up
        self.placed: dict[tuple[int, bytes], tuple[list[Any], list[Any]]] = {}
        self.blobs: dict[str, Any] = {}
        for message in known_messages:
            self.blobs.setdefault(message_hash(message), message)
        self.stripped: dict[str, Any] = {}  # key -> the message without cache_control (one object)
        self.out: dict[str, JournaledRequest] = {}
        self.previous: tuple[list[Any], int] | None = ([], 0)
        self.views = _Views()  # the requests whose messages the previous request's list holds
        self.changes = _Changes()
        self.ordinal = 0

    def shape(self, data: Mapping[str, Any]) -> None:
        key = _key(data.get("shapeHash"))
        shape = data.get("shape")
        if key is not None and isinstance(shape, Mapping):
            self.shapes[key] = shape

    def blob(self, data: Mapping[str, Any]) -> None:
        key = _key(data.get("hash"))
        if key is not None and isinstance(data.get("message"), Mapping):
            self.blobs[key] = data["message"]
            self.stripped.pop(key, None)

    def _front(self, data: Mapping[str, Any]) -> tuple[list[Any] | None, list[Any] | None]:
        """The system prompt and tools of the request's shape (one list per shape, not per
        request), or none when the shape is unknown."""
        shape_key = _key(data.get("shapeHash")) or ""
        shape = self.shapes.get(shape_key)
        if shape is None:
            return None, None
        front = self.fronts.get(shape_key)
        if front is None or front[0] is not shape:  # one list per shape, not per request
            front = (shape, _list(shape.get("system")), _list(shape.get("tools")))
            self.fronts[shape_key] = front
        return front[1], front[2]

    def request(self, data: Mapping[str, Any], line: int) -> None:
        """One journaled request: its front, its messages (resolved from the previous list and
        the blobs), the marks it placed."""
        system, tools = self._front(data)
        self.ordinal += 1
        ordinal, changes = self.ordinal, self.changes
        history = _history(data, self.previous, self.blobs, self.stripped, self.views)
        if history is not None:  # only the kept messages stay changed
            keep = data.get("keep", 0)
            changes.drop_from(keep if isinstance(keep, int) else 0, ordinal)
        marks = data.get("cacheControl")
        if system is not None and isinstance(marks, list) and _marks(marks, "system"):
            system = _marked_system(system, marks, self.placed, self.systems)  # (where, alone)
        message_marks: tuple[Any, ...] = ()
        breakpoints: tuple[tuple[int, int, Mapping[str, Any]], ...] | None = ()
        if history is not None and _marks(marks, "messages"):
            message_marks = _message_marks(marks)
        params = data.get("params")
        request = self.out[data["id"]] = JournaledRequest(
            data["id"],
            system,
            tools,
            params if isinstance(params, Mapping) else {},
            history[0] if history is not None else None,
            line,
            history[1] if history is not None else 0,
            message_marks,
            breakpoints,
            changes,
            ordinal,
        )
        if message_marks:
            assert history is not None
            self._place_marks(request, message_marks, history[1])
        if history is not None:
            if self.previous is None or history[0] is not self.previous[0]:
                self.views = _Views()  # a list of its own: no earlier request holds it
            self.views.add(request)
        self.previous = history

    def _place_marks(
        self, request: JournaledRequest, message_marks: tuple[Any, ...], count: int
    ) -> None:
        """The request's breakpoints on its messages; a message a mark changed is recorded
        as changed, for the later requests that keep it."""
        sent = _Sent(request)
        object.__setattr__(request, "breakpoints", _plain_breakpoints(message_marks, sent, count))
        # placing a mark on a string content makes it a list, and a later request
        # that keeps the message keeps it as this one sent it
        for i, message in _placed(sent, count, message_marks).items():
            plain = _without_cache_control(message)
            if plain != sent[i]:
                self.changes.add(i, request.ordinal, plain)


def _message_marks(marks: Any) -> tuple[Any, ...]:
    """The request's cache marks on its messages (``path`` under ``messages``)."""
    return tuple(
        m
        for m in marks or ()
        if isinstance(m, Mapping)
        and isinstance(m.get("path"), list)
        and m["path"][:1] == ["messages"]
    )


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
    views: _Views,
) -> tuple[list[Any], int] | None:
    """The request's messages without ``cache_control`` as ``(list, count)``: the previous
    request's list when they extend it (appended to), else a new list; None: unresolved.

    The cost is the record's own length: kept messages are the previous list's, and each tail
    message is compared by identity with the one at its place (each blob is stripped once).
    Where the request sends a message of that list again, changed, the list is cut there and
    goes on with the request's messages, and the earlier requests (``views``) that sent the
    messages past the cut keep those as their tail (`_Views.cut`); a new list is made instead
    when that would copy more than the new list does (a cut far back)."""
    keep, tail = data.get("keep", 0), data.get("tail")
    if isinstance(keep, bool) or not isinstance(keep, int) or not isinstance(tail, list):
        return None
    if keep < 0 or (keep and (previous is None or keep > previous[1])):
        return None
    messages = _tail_messages(tail, blobs, stripped)
    if messages is None or not (keep or messages):
        return None  # (no messages at all: a request with none was not sent)
    return _extended(previous[0] if previous is not None else [], keep, messages, views)


def _tail_messages(
    tail: list[Any], blobs: Mapping[str, Any], stripped: dict[str, Any]
) -> list[Any] | None:
    """The messages a record's ``tail`` names, each blob stripped of ``cache_control`` once;
    None when one is not in the journal."""
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
    return messages


def _extended(
    base: list[Any], keep: int, messages: list[Any], views: _Views
) -> tuple[list[Any], int]:
    """``base[:keep]`` then ``messages`` as ``(list, count)``: ``base`` itself where the
    messages are its own or extend it, cut (`_Views.cut`) where that copies less than a new
    list would, else a new list."""
    at = keep
    n = 0
    while n < len(messages) and at < len(base) and base[at] is messages[n]:
        at += 1
        n += 1
    if n == len(messages):
        return base, at
    if at < len(base) and views.cost(at) <= at:
        views.cut(base, at)
        del base[at:]
    if at == len(base):
        base.extend(messages[n:])
        return base, len(base)
    return [*base[:at], *messages[n:]], at + len(messages) - n


_DROPPED = object()


class _Changes:
    """The messages that requests' marks changed (placing a mark on a string content makes it
    a list, and a later request that keeps the message keeps it as that one sent it), for the
    whole journal: per message index, its changes and the requests that stopped keeping it, in
    journal order, so that each request reads them at its own place (`at`) and no request
    copies them. Request ``o`` drops (``2o``) before it changes (``2o + 1``)."""

    def __init__(self) -> None:
        self.events: dict[int, list[tuple[int, Any]]] = {}  # index -> (when, message)
        self._live: list[int] = []  # the indices whose last event is a change, in order
        self._since: dict[int, int] = {}  # ordinal -> how many indices were live for it

    def add(self, i: int, ordinal: int, message: Any) -> None:
        events = self.events.setdefault(i, [])
        if not events or events[-1][1] is _DROPPED:
            bisect.insort(self._live, i)
        events.append((2 * ordinal + 1, message))

    def drop_from(self, keep: int, ordinal: int) -> None:
        """Request ``ordinal`` keeps messages ``0 .. keep-1`` only."""
        while self._live and self._live[-1] >= keep:
            self.events[self._live.pop()].append((2 * ordinal, _DROPPED))
        self._since[ordinal] = len(self._live)

    def any_at(self, ordinal: int) -> bool:
        return self._since.get(ordinal, 0) > 0

    def at(self, i: int, ordinal: int) -> Any:
        """Message ``i`` as request ``ordinal`` sent it when a change holds it, else None."""
        for key, message in reversed(self.events.get(i, ())):
            if key <= 2 * ordinal:
                return None if message is _DROPPED else message
        return None

    def indices(self, size: int) -> list[int]:
        """The indices below ``size`` that some request changed."""
        return [i for i in self.events if i < size]


class _Views:
    """The journaled requests whose messages are the first ones of one shared list, by how
    many they take (ascending)."""

    def __init__(self) -> None:
        self._views: list[JournaledRequest] = []

    def add(self, request: JournaledRequest) -> None:
        at = len(self._views)
        while at and self._views[at - 1].count > request.count:
            at -= 1  # (a request that sent fewer messages than the one before: rare)
        self._views.insert(at, request)

    def cost(self, at: int) -> int:
        """How many messages cutting the list at ``at`` moves into the requests' tails."""
        total = 0
        for view in reversed(self._views):
            if view.count <= at:
                break
            total += view.count - at
            if total > at:
                break  # (more than a new list: the caller makes one)
        return total

    def cut(self, base: list[Any], at: int) -> None:
        """Move ``base[at:]`` out of the requests that hold it, into their tails."""
        cut: list[JournaledRequest] = []
        while self._views and self._views[-1].count > at:
            view = self._views.pop()
            object.__setattr__(view, "tail", (*base[at : view.count], *view.tail))
            object.__setattr__(view, "count", at)
            cut.append(view)
        self._views.extend(reversed(cut))


class _Sent(Sequence[Any]):
    """A request's messages as it sent them before its own marks (read index by index)."""

    def __init__(self, request: JournaledRequest) -> None:
        self._request = request
        self._size = request.size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: Any) -> Any:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError("an index")
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
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


__all__ = ["JournaledRequest", "message_hash", "read_journal"]
