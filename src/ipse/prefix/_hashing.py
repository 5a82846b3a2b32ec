"""A request flattened into its cache positions, each block hashed once.

`Flattener.flatten` turns a request body into a `Flat`: the blocks in the provider's prefix
order (tools, system, settings, history, newest input for Anthropic; system, tools, ... for
OpenAI and vLLM), each with a content hash, a chained prefix hash, its cumulative token
estimate, its breakpoint (``cache_control``) and where it sits in the request.

Speed comes from memoising, never from comparing histories: the tool list, the system prompt
and every message are serialized once per request and looked up by the hash of those bytes (or
by object identity when requests share dicts), so a block seen in an earlier request is never
split, hashed or counted again. ``cache_control`` is not part of a block's hash: moving a
breakpoint does not change the prefix. The fast hash is Python's own (stable within one run,
which is all a replay needs); ``stable=True`` uses BLAKE2b for hashes shown to people.

Its structs are msgspec structs, not dataclasses: six dataclasses more cost ``ipse prefix`` 22M
more instructions at import, 2.6% of the command on an 8 MB session (``python
bench/instructions.py --size 8 --source`` a checkout with them as dataclasses).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import msgspec
import orjson

from ipse import jsonio
from ipse._names import Names
from ipse.jsonio import is_object
from ipse.prefix._columns import Column, InputWhere, OverlayTtls, backing
from ipse.prefix._growing import SharedHistory
from ipse.prefix._rules import Rules
from ipse.tokens import TokenCounter
from ipse.transcript import Codec, Positions, body_codec, without_payloads

# (layer, first index, second index): tools (tool, -1), system (block, -1), settings (n, -1),
# history / input (message, block).
Locator: TypeAlias = tuple[str, int, int]

_IMAGE_TYPES = Names({"image", "image_url", "input_image", "document"})
_IMAGE_KINDS = frozenset(_IMAGE_TYPES)  # (for a value known to be a string: no Names call)
_RUN_KINDS = frozenset({"tool_use", "tool_result"})  # (asked of kinds, always strings)
_MESSAGES = ("history", "input")  # the layers of message positions


class _Seg(msgspec.Struct):
    """The positions one memoised part (tool list, system prompt, message) contributes."""

    hashes: list[int]
    tokens: list[int]
    ttls: list[str | None]
    kinds: list[str]
    texts: list[bytes]
    has_image: bool = False


class _Chunk(msgspec.Struct):
    """A segment's positions after a given prefix: chained hashes, and relative counts."""

    seg: _Seg
    chain: list[int]
    cum: list[int]  # tokens within the segment, cumulative
    where: list[Locator]
    groups: list[int]  # lookback positions within the segment, from 1
    breakpoints: int


class _Build(msgspec.Struct):
    """A request's positions while they are appended (and a session's shared store)."""

    hashes: list[int] = msgspec.field(default_factory=list)
    chain: list[int] = msgspec.field(default_factory=list)
    cum: list[int] = msgspec.field(default_factory=list)
    ttls: list[str | None] = msgspec.field(default_factory=list)
    where: list[Locator] = msgspec.field(default_factory=list)
    groups: list[int] = msgspec.field(default_factory=list)
    settings: dict[str, bytes] = msgspec.field(default_factory=dict)
    setting_names: list[str] = msgspec.field(default_factory=list)
    tail: int = 0
    breakpoints: int = 0
    texts: list[bytes] = msgspec.field(default_factory=list)


class Flat(msgspec.Struct):
    """One request as a sequence of cache positions."""

    model: str | None
    hashes: Sequence[int] = ()  # content hash per position
    chain: Sequence[int] = ()  # prefix hash through each position
    cum: Sequence[int] = ()  # estimated tokens through each position
    ttls: Sequence[str | None] = ()  # breakpoint at the position
    where: Sequence[Locator] = ()
    groups: Sequence[int] = ()  # lookback position number
    # cache-relevant settings, as canonical JSON
    settings: dict[str, bytes] = msgspec.field(default_factory=dict)
    setting_names: list[str] = msgspec.field(default_factory=list)  # settings positions, in order
    tail: int = 0  # first position of the new tail (the last assistant turn onward)
    messages: int = 0
    breakpoints: int = 0  # cache_control markers found, automatic caching included
    texts: Sequence[bytes] = ()  # the hashed bytes (kept by stable flattens)
    marks: Sequence[int] = ()  # the positions that have a breakpoint, in order
    store: object = None  # the positions' shared store, when other requests share it
    stored: int = 0  # how many of the positions are the store's (the rest are the body's own)
    first_message: int | None = None  # the hash of the first message's first position

    @property
    def total(self) -> int:
        cum = self.cum
        n = len(cum)
        return backing(cum)[n - 1] if n else 0  # (a store's list: no view's checks)

    def tokens_before(self, position: int) -> int:
        """Estimated tokens of positions ``0 .. position-1``."""
        if position <= 0:
            return 0
        if position > len(self.cum):
            raise IndexError("position out of range")
        return backing(self.cum)[position - 1]

    def extends(self, other: Flat) -> bool:
        """Whether ``other``'s positions are the first of this request's (known without
        comparing: both are views of one store; False says nothing)."""
        return (
            self.store is not None
            and self.store is other.store
            and other.stored == len(other.chain)
            and len(other.chain) <= self.stored
        )


class _Tail(msgspec.Struct, frozen=True):
    """A body's own positions after the store's (`Flattener._tail`), in the body's numbers."""

    hashes: list[int]
    chain: list[int]
    cum: list[int]
    ttls: list[str | None]
    where: list[Locator]
    groups: list[int]
    marks: list[int]
    ends: list[int]


_NO_TAIL = _Tail([], [], [], [], [], [], [], [])


class _Ends:
    """Where each message of a body with a tail ends: the store's, then the tail's."""

    __slots__ = ("_count", "_shared", "_tail")

    def __init__(self, shared: list[int], count: int, tail: list[int]) -> None:
        self._shared, self._count, self._tail = shared, count, tail

    def __getitem__(self, i: int) -> int:
        return self._shared[i] if i < self._count else self._tail[i - self._count]


class _Store(msgspec.Struct):
    """The positions of the requests that share one list of messages: the front (tools,
    system, settings), then each message's positions, appended the first time one is reached."""

    build: _Build
    base: list[Any]
    keep: tuple[Any, Any]  # the tools and system the key names by identity, kept alive
    front: int  # positions before the first message
    marks: list[int]  # positions with a breakpoint
    ends: list[int] = msgspec.field(default_factory=list)  # positions through message i
    count: int = 0  # messages appended


def _fast_hash(data: bytes) -> int:
    return hash(data)


def _stable_hash(data: bytes) -> int:
    import hashlib  # (stable hashes are for the few requests shown to people: on use)

    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _fast_chain(parent: int, child: int) -> int:
    return hash((parent, child))


def _stable_chain(parent: int, child: int) -> int:
    data = parent.to_bytes(8, "big", signed=False) + child.to_bytes(8, "big", signed=False)
    return _stable_hash(data)


def _dumps(value: Any) -> bytes:
    try:
        return jsonio.dumps(value)
    except TypeError:
        return repr(value).encode()


def _strip(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """The block without its ``cache_control``, and the breakpoint's TTL when it had one."""
    marker = raw.get("cache_control")
    if marker is None:
        return raw, None
    ttl = "5m"
    if isinstance(marker, Mapping) and marker.get("ttl") == "1h":
        ttl = "1h"
    return {k: v for k, v in raw.items() if k != "cache_control"}, ttl


def _as_text(text: str) -> dict[str, str]:
    """A string content as the one text block it stands for (the provider renders both alike)."""
    return {"type": "text", "text": text}


_TEXT_PARTS = Names({"text", "input_text", "output_text"})


def _rendered_text(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """A plain text block in one key order: ``{"text", "type"}`` and ``{"type", "text"}`` are
    the same block to the provider."""
    if len(block) == 2 and block.get("type") == "text" and isinstance(block.get("text"), str):
        return _as_text(block["text"])
    return block


def _as_rendered(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A per-message position with one plain text part as the string it renders as: between
    turns a harness may send the same message either way (a moving breakpoint does this)."""
    content = message.get("content")
    if not (isinstance(content, list) and len(content) == 1):
        return message
    part = content[0]
    if not isinstance(part, Mapping) or part.get("type") not in _TEXT_PARTS:
        return message
    if not isinstance(part.get("text"), str) or set(part) - {"type", "text", "cache_control"}:
        return message
    return {**message, "content": part["text"]}


def block_text(raw: Any) -> str:
    """The text a block is counted as (words; tool calls as name plus JSON arguments)."""
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, Mapping):
        return _dumps(raw).decode()
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return str(raw["text"])
    if kind == "thinking" and isinstance(raw.get("thinking"), str):
        return str(raw["thinking"])
    if kind == "tool_use":
        return f"{raw.get('name', '')} {_dumps(raw.get('input')).decode()}"
    if kind == "tool_result":
        content = raw.get("content")
        if isinstance(content, list):
            return "\n".join(block_text(part) for part in content)
        return content if isinstance(content, str) else ""
    if "role" in raw:  # an OpenAI message as one position
        parts = [block_text(raw.get("content") or "")]
        if isinstance(raw.get("content"), list):
            parts = [block_text(p) for p in raw["content"]]
        calls = raw.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        return "\n".join(parts)
    return _dumps(without_payloads(raw)).decode()


def _salt(message: Mapping[str, Any]) -> bytes:
    """What a message's first block is hashed after: its role (a block means something else
    said by someone else)."""
    return f"{message.get('role', message.get('type', ''))}:".encode("utf-8", "surrogatepass")


def _content_blocks(message: Mapping[str, Any]) -> list[Any]:
    """A message's blocks as positions: its list, else its text as the one block it is."""
    content = message.get("content")
    if isinstance(content, list) and content:
        return content
    return [_as_text(content if isinstance(content, str) else "")]


def _holds_image_in(message: Any) -> bool:
    """Whether a message's content holds an image (`_first_image` asks this of each)."""
    content = message.get("content") if is_object(message) else None
    return isinstance(content, list) and _holds_image(content)


def _holds_image(content: list[Any]) -> bool:
    for block in content:  # (a loop: a generator costs a frame per block)
        if is_object(block):
            kind = block.get("type")
            if isinstance(kind, str) and kind in _IMAGE_KINDS:
                return True
    return False


def _last_assistant(messages: Sequence[Any], dialect: Codec) -> int:
    """The index of the last message the model wrote (-1: none)."""
    for i in range(len(messages) - 1, -1, -1):
        if dialect.speaker(messages[i]) == "assistant":
            return i
    return -1


def _last_shared_assistant(dialect: Codec, base: list[Any], count: int, own: Sequence[Any]) -> int:
    """`_last_assistant` of a shared body: its own tail (numbered from ``count``), else the
    shared list's first ``count`` messages (read in place, not copied)."""
    k = _last_assistant(own, dialect)
    if k >= 0:
        return count + k
    for i in range(count - 1, -1, -1):
        if dialect.speaker(base[i]) == "assistant":
            return i
    return -1


class Flattener:
    """Flattens the requests of one log, memoising every part it has seen.

    ``counter`` counts tokens of each distinct block once; without one, a block is estimated at
    a quarter of its serialized bytes (callers scale estimates to recorded usage when they have
    it). ``stable`` selects BLAKE2b hashes (reproducible across runs) over Python's own.
    """

    def __init__(
        self, rules: Rules, counter: TokenCounter | None = None, *, stable: bool = False
    ) -> None:
        self.rules = rules
        self.counter = counter
        self.stable = stable
        self._hash: Callable[[bytes], int] = _stable_hash if stable else _fast_hash
        self._chain: Callable[[int, int], int] = _stable_chain if stable else _fast_chain
        self._order: Sequence[str] = rules.value("order")
        self._settings: Mapping[str, str] = rules.settings()
        self._anthropic = rules.provider == "anthropic"
        self._by_bytes: dict[int, _Seg] = {}
        self._by_id: dict[int, tuple[Any, _Seg]] = {}
        self._tokens: dict[int, int] = {}
        self._salts: dict[str, bytes] = {}  # role -> `_salt` (`_role_salt`)
        self._chunks: dict[tuple[int, int, str, int | None], _Chunk] = {}
        self._stores: dict[tuple[Any, ...], _Store] = {}
        # (front, key, has_image) -> what `_flatten_shared` derives from a front that many
        # requests share (the front kept, so that its id is not reused while the entry lives)
        self._fronts: dict[tuple[int, str, bool], tuple[Any, Any, Codec, Positions, Any]] = {}
        self._images: dict[int, tuple[list[Any], int, int]] = {}
        self._shared_order = list(self._order[-2:]) == ["history", "input"]

    # ------------------------------------------------------------------------ tokens

    def _count(self, h: int, raw: Any, data: bytes) -> int:
        cached = self._tokens.get(h)
        if cached is None:
            if self.counter is None:
                cached = max(1, len(data) // 4)
            else:
                cached = self.counter.count(block_text(raw))
            self._tokens[h] = cached
        return cached

    # ------------------------------------------------------------------------ parts

    def _part(self, key_obj: Any, build: Callable[[], _Seg], whole: Any) -> _Seg:
        """A memoised segment: by identity of ``key_obj``, else by the bytes of ``whole``."""
        hit = self._by_id.get(id(key_obj))
        if hit is not None and hit[0] is key_obj:
            return hit[1]
        h = self._hash(_dumps(whole))
        seg = self._by_bytes.get(h)
        if seg is None:
            seg = build()
            self._by_bytes[h] = seg
        self._by_id[id(key_obj)] = (key_obj, seg)
        return seg

    def _block(self, item: Any, salt: bytes) -> tuple[int, int, str | None, str, bytes]:
        """One block's position: its hash, tokens, breakpoint TTL, kind and hashed bytes
        (``salt`` before them: the first block of a part says which part it opens)."""
        if is_object(item):
            body, ttl = _strip(item)
            body = _rendered_text(body)
            kind = str(body.get("type", ""))
        else:
            body, ttl, kind = item, None, "text"
        data = salt + _dumps(body) if salt else _dumps(body)
        h = self._hash(data)
        return h, self._count(h, body, data), ttl, kind, data

    def _blocks(self, items: Sequence[Any], salt: bytes = b"") -> _Seg:
        seg = _Seg([], [], [], [], [])
        for n, item in enumerate(items):
            h, tokens, ttl, kind, data = self._block(item, salt if n == 0 else b"")
            if kind in _IMAGE_KINDS:
                seg.has_image = True
            seg.hashes.append(h)
            seg.tokens.append(tokens)
            seg.ttls.append(ttl)
            seg.kinds.append(kind)
            seg.texts.append(data if self.stable else b"")
        return seg

    def _tools(self, tools: Any) -> _Seg:
        if not isinstance(tools, list) or not tools:
            return _Seg([], [], [], [], [])
        return self._part(tools, lambda: self._blocks(tools, b"tools:"), tools)

    def _system(self, parts: Positions) -> _Seg:
        if not parts.system:
            return _Seg([], [], [], [], [])
        key = parts.system_source if parts.system_source is not None else parts.system
        return self._part(key, lambda: self._blocks(parts.system, b"system:"), parts.system)

    def _message(self, message: Any, per_message: bool, *, memo: bool = True) -> _Seg:
        """A message's positions; memoised (by identity, else by its bytes) unless ``memo`` is
        False: a shared history reaches each of its messages once, and serializing a whole
        message only to look it up doubles the cost of hashing its blocks."""
        if not isinstance(message, Mapping):
            return self._blocks([message], b"?:")
        salt = _salt(message)
        build: Callable[[], _Seg]
        if per_message:  # OpenAI and vLLM: one position per message (or input item)
            build = lambda: self._one_message(message, salt)  # noqa: E731
        else:
            content = _content_blocks(message)
            build = lambda: self._blocks(content, salt)  # noqa: E731
        return self._part(message, build, message) if memo else build()

    def _one_message(self, message: Mapping[str, Any], salt: bytes) -> _Seg:
        seg = self._blocks([_as_rendered(message)], salt)
        content = message.get("content")
        if isinstance(content, list):
            seg.has_image = any(
                isinstance(p, Mapping) and p.get("type") in _IMAGE_TYPES for p in content
            )
        seg.kinds[0] = "message"
        return seg

    # ------------------------------------------------------------------------ settings

    def _setting_values(self, body: Mapping[str, Any], has_image: bool) -> dict[str, bytes]:
        values: dict[str, bytes] = {}
        for name in self._settings:
            if name == "images":
                if has_image:
                    values[name] = b"true"
                continue
            if name not in body:
                continue
            value = body[name]
            if name == "output_config" and isinstance(value, Mapping):
                default = self.rules.table.get("default_effort", {}).get("value")
                if value.get("effort") == default:
                    value = {k: v for k, v in value.items() if k != "effort"}
                if not value:
                    continue
            values[name] = jsonio.dumps(value, option=jsonio.OPT_SORT_KEYS)
        return values

    # ------------------------------------------------------------------------ flatten

    def flatten(self, body: Mapping[str, Any]) -> Flat:
        """The request's cache positions in prefix order."""
        if isinstance(body, SharedHistory) and self._shared_order and not self.stable:
            return self._flatten_shared(body)
        model = body.get("model")
        flat = _Build()
        dialect = body_codec(body, self.rules.provider)
        parts = dialect.positions(body)
        segs = [self._message(m, parts.per_message) for m in parts.messages]
        flat.settings = self._setting_values(body, any(s.has_image for s in segs))
        levels = self._levels(flat.settings)
        last_assistant = _last_assistant(parts.messages, dialect)
        self._emit_settings(flat, levels.get("all", ()))
        for layer in self._order:
            if layer == "tools":
                self._emit(flat, self._tools(parts.tools), "tools", None)
            elif layer == "system":
                self._emit_system(flat, parts, levels.get("system", ()))
            elif layer == "settings":
                self._emit_settings(flat, levels.get("messages", ()))
            elif layer == "history":
                self._emit_history(flat, segs, last_assistant, len(parts.system_messages))
            elif layer == "input":
                self._emit_input(flat, segs, last_assistant, len(parts.system_messages))
        self._automatic(flat, body)
        return Flat(
            model=model if isinstance(model, str) else None,
            hashes=flat.hashes,
            chain=flat.chain,
            cum=flat.cum,
            ttls=flat.ttls,
            where=flat.where,
            groups=flat.groups,
            settings=flat.settings,
            setting_names=flat.setting_names,
            tail=flat.tail,
            messages=len(parts.system_messages) + len(parts.messages),
            breakpoints=flat.breakpoints,
            texts=flat.texts,
            marks=[p for p, ttl in enumerate(flat.ttls) if ttl is not None],
            first_message=next(
                (h for w, h in zip(flat.where, flat.hashes, strict=True) if w[0] in _MESSAGES),
                None,
            ),
        )

    # ------------------------------------------------------------------------ shared history

    def _flatten_shared(self, body: SharedHistory) -> Flat:
        """`flatten` for a body whose messages are a prefix of a list other bodies share.

        The same positions as `flatten`, computed once per message for all the bodies that
        share the list: each message is appended to one store the first time a body reaches
        it, and a body is a view of the store's first positions, with its own layer names
        after its last assistant turn and its own automatic breakpoint. A body's ``tail`` (the
        messages the list no longer holds for it) gets positions of its own after those.
        """
        base, count, own = body.base, body.count, body.tail
        front = body.front
        has_image = self._first_image(base, count) < count or any(map(_holds_image_in, own))
        settings, dialect, parts, front_key = self._shared_front(body, has_image)
        store = self._shared_store(body, parts, settings, front_key)
        build = store.build
        n = store.ends[count - 1] if count else store.front
        marks = store.marks[: bisect.bisect_right(store.marks, n - 1)]
        tail = _NO_TAIL
        end: Callable[[int], int] = store.ends.__getitem__  # the position after message i's
        if own:
            tail = self._tail(store, n, own, count, parts.per_message)
            marks.extend(tail.marks)
            end = _Ends(store.ends, count, tail.ends).__getitem__
        last = _last_shared_assistant(dialect, base, count, own)
        total = n + len(tail.hashes)
        first_turn = store.front if last <= 0 else end(last - 1)
        input_from = store.front if last < 0 else end(last)
        overlay: dict[int, str] = {}
        for i, j, ttl in body.overlay:  # the request's own breakpoints on shared blocks
            overlay[(end(i - 1) if i else store.front) + j] = ttl
        if overlay:
            marks = sorted({*marks, *overlay})
        breakpoints = len(marks)
        auto = front.get("cache_control")
        if self._anthropic and auto is not None and total:
            marks = self._automatic_breakpoint(build, tail, n, total, auto, overlay, marks)
            breakpoints += 1
        ttls: Sequence[str | None] = (
            OverlayTtls(build.ttls, n, overlay, tail.ttls)
            if overlay
            else Column(build.ttls, n, tail.ttls)
        )
        model = front.get("model")
        first_message = build.hashes[store.front] if n > store.front else None
        if first_message is None and tail.hashes:
            first_message = tail.hashes[0]
        return Flat(
            model=model if isinstance(model, str) else None,
            hashes=Column(build.hashes, n, tail.hashes),
            chain=Column(build.chain, n, tail.chain),
            cum=Column(build.cum, n, tail.cum),
            ttls=ttls,
            where=InputWhere(build.where, n, input_from, tail.where),
            groups=Column(build.groups, n, tail.groups),
            settings=build.settings,
            setting_names=build.setting_names,
            tail=first_turn,
            messages=count + len(own),
            breakpoints=breakpoints,
            marks=marks,
            store=store,
            stored=n,
            first_message=first_message,
        )

    def _shared_front(
        self, body: SharedHistory, has_image: bool
    ) -> tuple[Any, Codec, Positions, Any]:
        """The settings, codec and front positions of a shared body's front (everything but
        its messages), worked out once per front object, and the key of its store."""
        front = body.front
        known = self._fronts.get((id(front), body.key, has_image))
        if known is not None and known[0] is front:
            _, settings, dialect, parts, front_key = known
            return settings, dialect, parts, front_key
        settings = self._setting_values(front, has_image)
        dialect = body_codec(body, self.rules.provider)
        parts = dialect.positions(front)
        front_key = (id(parts.tools), id(parts.system_source), tuple(settings.items()))
        self._fronts[(id(front), body.key, has_image)] = (
            front,
            settings,
            dialect,
            parts,
            front_key,
        )
        return settings, dialect, parts, front_key

    def _shared_store(
        self, body: SharedHistory, parts: Positions, settings: Any, front_key: Any
    ) -> _Store:
        """The store of the list ``body`` shares, holding at least its first ``count``
        messages' positions (each message appended the first time a body reaches it)."""
        base, count = body.base, body.count
        key = (id(base), *front_key)
        store = self._stores.get(key)
        if store is None or store.base is not base:
            store = self._new_store(base, parts, settings)
            self._stores[key] = store
        for i in range(store.count, count):
            self._append_message(store, base[i], i, parts.per_message)
        store.count = max(store.count, count)
        return store

    def _automatic_breakpoint(
        self,
        build: _Build,
        tail: _Tail,
        n: int,
        total: int,
        auto: Any,
        overlay: dict[int, str],
        marks: list[int],
    ) -> list[int]:
        """Anthropic's automatic breakpoint (the body's top-level ``cache_control``) on its
        last position that is not a setting, added to ``overlay`` and to the marks returned
        unless a breakpoint is there already."""
        at = total - 1
        while at > 0 and at < n and build.where[at][0] == "settings":
            at -= 1
        ttl_at = build.ttls[at] if at < n else tail.ttls[at - n]
        if overlay.get(at, ttl_at) is None:
            overlay[at] = "1h" if is_object(auto) and auto.get("ttl") == "1h" else "5m"
            marks = sorted([*marks, at])
        return marks

    def _tail(
        self, store: _Store, n: int, messages: Sequence[Any], first: int, per_message: bool
    ) -> _Tail:
        """The positions of a body's own messages (numbered from ``first``) after the store's
        first ``n``: appended as `_append_message` appends to the store, to a build that
        starts where those ``n`` end."""
        shared = store.build
        seed = _Build()
        if n:
            seed.hashes.append(shared.hashes[n - 1])
            seed.chain.append(shared.chain[n - 1])
            seed.cum.append(shared.cum[n - 1])
            seed.ttls.append(None)
            seed.where.append(shared.where[n - 1])
            seed.groups.append(shared.groups[n - 1])
        skip = len(seed.hashes)
        scratch = _Store(seed, [], store.keep, 0, [])
        for k, message in enumerate(messages):
            self._append_message(scratch, message, first + k, per_message)
        return _Tail(
            hashes=seed.hashes[skip:],
            chain=seed.chain[skip:],
            cum=seed.cum[skip:],
            ttls=seed.ttls[skip:],
            where=seed.where[skip:],
            groups=seed.groups[skip:],
            marks=[n + m - skip for m in scratch.marks],
            ends=[n + e - skip for e in scratch.ends],
        )

    def _append_message(self, store: _Store, message: Any, i: int, per_message: bool) -> None:
        """Message ``i``'s positions appended to a shared store: what `_emit` of `_message`
        appends, in one pass over its blocks (each block of a shared history is reached once,
        so nothing is memoised on the way). Shared stores are for the fast hashes only
        (`flatten`), which this uses as `hash` itself."""
        if per_message or not is_object(message):
            self._append_whole(store, message, i, per_message)
            return
        build = store.build
        start = len(build.hashes)
        content = message.get("content")
        if not (isinstance(content, list) and content):
            content = _content_blocks(message)
        salt = self._role_salt(message)
        counts = self._tokens
        chain = build.chain[-1] if build.chain else 0
        total = build.cum[-1] if build.cum else 0
        group = build.groups[-1] if build.groups else -1
        previous = ""
        for j, item in enumerate(content):  # (as `_blocks`, then `_chunk`)
            # `_block` inline for a dict without a breakpoint (most blocks of a session), with
            # the fast hashes: the six calls it makes per block cost more than their work
            if type(item) is dict and item.get("cache_control") is None:
                body: Mapping[str, Any] = item
                if len(body) == 2 and body.get("type") == "text":  # (as `_rendered_text`)
                    body = _rendered_text(body)
                kind = body.get("type", "")
                if type(kind) is not str:
                    kind = str(kind)
                try:
                    data = orjson.dumps(body)
                except TypeError:  # (what orjson does not write: `_dumps` knows)
                    data = _dumps(body)
                if not j:
                    data = salt + data
                h = hash(data)
                tokens = counts.get(h)
                if tokens is None:
                    tokens = self._count(h, body, data)
                ttl = None
            else:
                h, tokens, ttl, kind, data = self._block(item, b"" if j else salt)
            chain = hash((chain, h))  # (`_fast_chain`)
            total += tokens
            if not (kind == previous and kind in _RUN_KINDS):
                group += 1
            previous = kind
            build.hashes.append(h)
            build.chain.append(chain)
            build.cum.append(total)
            build.ttls.append(ttl)
            build.where.append(("history", i, j))
            build.groups.append(group)
            if ttl is not None:
                build.breakpoints += 1
                store.marks.append(start + j)
        store.ends.append(len(build.hashes))

    def _append_whole(self, store: _Store, message: Any, i: int, per_message: bool) -> None:
        """`_append_message` for a message hashed whole (``per_message``) or that is not an
        object: what `_emit` of `_one_message` appends, inline for an object (the eight calls
        and three structs on the way cost more than hashing it: a Codex rollout's replay is
        mostly this), else through `_message` and `_emit`, unmemoised."""
        build = store.build
        start = len(build.hashes)
        if per_message and is_object(message):
            h, tokens, ttl, _, _ = self._block(_as_rendered(message), self._role_salt(message))
            build.hashes.append(h)
            build.chain.append(hash((build.chain[-1] if build.chain else 0, h)))  # (fast)
            build.cum.append((build.cum[-1] if build.cum else 0) + tokens)
            build.ttls.append(ttl)
            build.where.append(("history", i, 0))
            build.groups.append((build.groups[-1] if build.groups else -1) + 1)
            if ttl is not None:
                build.breakpoints += 1
                store.marks.append(start)
            store.ends.append(start + 1)
            return
        seg = self._message(message, per_message, memo=False)
        self._emit(build, seg, "history", i, memo=False)
        store.marks.extend(start + j for j, ttl in enumerate(seg.ttls) if ttl is not None)
        store.ends.append(len(build.hashes))

    def _role_salt(self, message: Mapping[str, Any]) -> bytes:
        """`_salt`, kept per role: a session's messages have a few roles between them."""
        role = message.get("role")
        if type(role) is not str:
            return _salt(message)
        salt = self._salts.get(role)
        if salt is None:
            salt = self._salts[role] = _salt(message)
        return salt

    def _first_image(self, base: list[Any], count: int) -> int:
        """The index of the first message of ``base[:count]`` holding an image (else count)."""
        seen = self._images.get(id(base))
        scanned, first = (seen[1], seen[2]) if seen is not None and seen[0] is base else (0, -1)
        if first < 0 and scanned < count:
            for i in range(scanned, count):  # (`_holds_image_in`, inline: every message)
                message = base[i]  # (a dict is an object: `is_object` asked only of others)
                is_dict = type(message) is dict
                content = message.get("content") if is_dict or is_object(message) else None
                if not isinstance(content, list):
                    continue
                for block in content:  # (`_holds_image`, inline likewise)
                    if type(block) is dict or is_object(block):
                        kind = block.get("type")
                        if isinstance(kind, str) and kind in _IMAGE_KINDS:
                            first = i
                            break
                if first >= 0:
                    break
            self._images[id(base)] = (base, count, first)
        return first if first >= 0 else count

    def _new_store(self, base: list[Any], parts: Positions, settings: dict[str, bytes]) -> _Store:
        """A store holding the positions before the first message (order ends with messages)."""
        build = _Build(settings=settings)
        levels = self._levels(settings)
        self._emit_settings(build, levels.get("all", ()))
        for layer in self._order[:-2]:
            if layer == "tools":
                self._emit(build, self._tools(parts.tools), "tools", None)
            elif layer == "system":
                self._emit_system(build, parts, levels.get("system", ()))
            elif layer == "settings":
                self._emit_settings(build, levels.get("messages", ()))
        marks = [p for p, ttl in enumerate(build.ttls) if ttl is not None]
        return _Store(build, base, (parts.tools, parts.system_source), len(build.hashes), marks)

    def _levels(self, settings: Mapping[str, bytes]) -> dict[str, list[str]]:
        """Setting names by the level a change of them invalidates."""
        by_level: dict[str, list[str]] = {}
        for name in settings:
            by_level.setdefault(self._settings[name], []).append(name)
        return by_level

    def _emit_system(self, flat: _Build, parts: Positions, settings: Sequence[str]) -> None:
        self._emit_settings(flat, settings)
        self._emit(flat, self._system(parts), "system", None)
        for i, m in enumerate(parts.system_messages):
            self._emit(flat, self._message(m, parts.per_message), "system", i)

    def _emit_history(self, flat: _Build, segs: Sequence[_Seg], last: int, offset: int) -> None:
        """Messages before the newest input; ``flat.tail`` marks the last assistant turn."""
        flat.tail = len(flat.hashes)
        for i, seg in enumerate(segs[: last + 1]):
            if i == last:
                flat.tail = len(flat.hashes)
            self._emit(flat, seg, "history", offset + i)

    def _emit_input(self, flat: _Build, segs: Sequence[_Seg], last: int, offset: int) -> None:
        for i, seg in enumerate(segs[last + 1 :], start=last + 1):
            self._emit(flat, seg, "input", offset + i)

    def _automatic(self, flat: _Build, body: Mapping[str, Any]) -> None:
        """Anthropic's automatic caching: a top-level ``cache_control`` marks the last block."""
        auto = body.get("cache_control")
        if not (self._anthropic and auto is not None and flat.ttls):
            return
        last = len(flat.ttls) - 1
        while last > 0 and flat.where[last][0] == "settings":
            last -= 1
        if flat.ttls[last] is None:
            flat.ttls[last] = (
                "1h" if isinstance(auto, Mapping) and auto.get("ttl") == "1h" else "5m"
            )
        flat.breakpoints += 1

    def _emit(
        self, flat: _Build, seg: _Seg, layer: str, index: int | None, *, memo: bool = True
    ) -> None:
        """Append a segment's positions; memoised by (prefix hash before it, segment), so a
        history repeated by the next request costs a few list extends, not a loop."""
        if not seg.hashes:
            return
        before = flat.chain[-1] if flat.chain else 0
        key = (before, id(seg), layer, index)
        chunk = self._chunks.get(key) if memo else None
        if chunk is None or chunk.seg is not seg:
            chunk = self._chunk(seg, before, layer, index)
            if memo:
                self._chunks[key] = chunk
        total = flat.cum[-1] if flat.cum else 0
        group = flat.groups[-1] if flat.groups else -1
        flat.hashes.extend(seg.hashes)
        flat.chain.extend(chunk.chain)
        flat.cum.extend([total + c for c in chunk.cum])
        flat.ttls.extend(seg.ttls)
        flat.breakpoints += chunk.breakpoints
        flat.where.extend(chunk.where)
        flat.groups.extend([group + g for g in chunk.groups])
        if self.stable:
            flat.texts.extend(seg.texts)

    def _chunk(self, seg: _Seg, chain: int, layer: str, index: int | None) -> _Chunk:
        chunk = _Chunk(seg, [], [], [], [], sum(1 for t in seg.ttls if t is not None))
        total = 0
        group = 0
        prev_kind = ""
        for j, h in enumerate(seg.hashes):
            chain = self._chain(chain, h)
            total += seg.tokens[j]
            kind = seg.kinds[j]
            if not (kind == prev_kind and kind in _RUN_KINDS):
                group += 1
            prev_kind = kind
            chunk.chain.append(chain)
            chunk.cum.append(total)
            chunk.where.append((layer, j, -1) if index is None else (layer, index, j))
            chunk.groups.append(group)
        return chunk

    def _emit_settings(self, flat: _Build, names: Sequence[str]) -> None:
        for name in names:
            data = f"setting:{name}=".encode() + flat.settings[name]
            h = self._hash(data)
            chain = self._chain(flat.chain[-1] if flat.chain else 0, h)
            flat.hashes.append(h)
            flat.chain.append(chain)
            flat.cum.append(flat.cum[-1] if flat.cum else 0)
            flat.ttls.append(None)
            flat.where.append(("settings", len(flat.setting_names), -1))
            flat.setting_names.append(name)
            flat.groups.append(flat.groups[-1] if flat.groups else 0)
            if self.stable:
                flat.texts.append(data)
