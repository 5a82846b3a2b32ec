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
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ipse import jsonio
from ipse.prefix._rules import Rules
from ipse.tokens import TokenCounter
from ipse.transcript._codec import Codec, Positions, body_codec
from ipse.transcript._stats import without_payloads

# (layer, first index, second index): tools (tool, -1), system (block, -1), settings (n, -1),
# history / input (message, block).
Locator: TypeAlias = tuple[str, int, int]

_IMAGE_TYPES = frozenset({"image", "image_url", "input_image", "document"})
_RUN_KINDS = frozenset({"tool_use", "tool_result"})


@dataclass(slots=True)
class _Seg:
    """The positions one memoised part (tool list, system prompt, message) contributes."""

    hashes: list[int]
    tokens: list[int]
    ttls: list[str | None]
    kinds: list[str]
    texts: list[bytes]
    has_image: bool = False


@dataclass(slots=True)
class _Chunk:
    """A segment's positions after a given prefix: chained hashes, and relative counts."""

    seg: _Seg
    chain: list[int]
    cum: list[int]  # tokens within the segment, cumulative
    where: list[Locator]
    groups: list[int]  # lookback positions within the segment, from 1
    breakpoints: int


@dataclass(slots=True)
class Flat:
    """One request as a sequence of cache positions."""

    model: str | None
    hashes: list[int] = field(default_factory=list)  # content hash per position
    chain: list[int] = field(default_factory=list)  # prefix hash through each position
    cum: list[int] = field(default_factory=list)  # estimated tokens through each position
    ttls: list[str | None] = field(default_factory=list)  # breakpoint at the position
    where: list[Locator] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)  # lookback position number
    settings: dict[str, bytes] = field(default_factory=dict)  # cache-relevant, canonical JSON
    setting_names: list[str] = field(default_factory=list)  # settings positions, in order
    tail: int = 0  # first position of the new tail (the last assistant turn onward)
    messages: int = 0
    breakpoints: int = 0  # cache_control markers found, automatic caching included
    texts: list[bytes] = field(default_factory=list)  # the hashed bytes (kept by stable flattens)

    @property
    def total(self) -> int:
        return self.cum[-1] if self.cum else 0

    def tokens_before(self, position: int) -> int:
        """Estimated tokens of positions ``0 .. position-1``."""
        return self.cum[position - 1] if position > 0 else 0


def _fast_hash(data: bytes) -> int:
    return hash(data)


def _stable_hash(data: bytes) -> int:
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


_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


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
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        return "\n".join(parts)
    return _dumps(without_payloads(raw)).decode()


def _last_assistant(messages: Sequence[Any], dialect: Codec) -> int:
    """The index of the last message the model wrote (-1: none)."""
    for i in range(len(messages) - 1, -1, -1):
        if dialect.speaker(messages[i]) == "assistant":
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
        self._chunks: dict[tuple[int, int, str, int | None], _Chunk] = {}

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

    def _blocks(self, items: Sequence[Any], salt: bytes = b"") -> _Seg:
        seg = _Seg([], [], [], [], [])
        for n, item in enumerate(items):
            if isinstance(item, Mapping):
                body, ttl = _strip(item)
                body = _rendered_text(body)
                kind = str(body.get("type", ""))
                if kind in _IMAGE_TYPES:
                    seg.has_image = True
            else:
                body, ttl, kind = item, None, "text"
            data = _dumps(body)
            if n == 0 and salt:
                data = salt + data
            h = self._hash(data)
            seg.hashes.append(h)
            seg.tokens.append(self._count(h, body, data))
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

    def _message(self, message: Any, per_message: bool) -> _Seg:
        if not isinstance(message, Mapping):
            return self._blocks([message], b"?:")
        salt = f"{message.get('role', message.get('type', ''))}:".encode()
        if per_message:  # OpenAI and vLLM: one position per message (or input item)
            return self._part(message, lambda: self._one_message(message, salt), message)
        content = message.get("content")
        if isinstance(content, list) and content:
            return self._part(message, lambda: self._blocks(content, salt), message)
        item = _as_text(content if isinstance(content, str) else "")
        return self._part(message, lambda: self._blocks([item], salt), message)

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
        model = body.get("model")
        flat = Flat(model=model if isinstance(model, str) else None)
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
        flat.messages = len(parts.system_messages) + len(parts.messages)
        self._automatic(flat, body)
        return flat

    def _levels(self, settings: Mapping[str, bytes]) -> dict[str, list[str]]:
        """Setting names by the level a change of them invalidates."""
        by_level: dict[str, list[str]] = {}
        for name in settings:
            by_level.setdefault(self._settings[name], []).append(name)
        return by_level

    def _emit_system(self, flat: Flat, parts: Positions, settings: Sequence[str]) -> None:
        self._emit_settings(flat, settings)
        self._emit(flat, self._system(parts), "system", None)
        for i, m in enumerate(parts.system_messages):
            self._emit(flat, self._message(m, parts.per_message), "system", i)

    def _emit_history(self, flat: Flat, segs: Sequence[_Seg], last: int, offset: int) -> None:
        """Messages before the newest input; ``flat.tail`` marks the last assistant turn."""
        flat.tail = len(flat.hashes)
        for i, seg in enumerate(segs[: last + 1]):
            if i == last:
                flat.tail = len(flat.hashes)
            self._emit(flat, seg, "history", offset + i)

    def _emit_input(self, flat: Flat, segs: Sequence[_Seg], last: int, offset: int) -> None:
        for i, seg in enumerate(segs[last + 1 :], start=last + 1):
            self._emit(flat, seg, "input", offset + i)

    def _automatic(self, flat: Flat, body: Mapping[str, Any]) -> None:
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

    def _emit(self, flat: Flat, seg: _Seg, layer: str, index: int | None) -> None:
        """Append a segment's positions; memoised by (prefix hash before it, segment), so a
        history repeated by the next request costs a few list extends, not a loop."""
        if not seg.hashes:
            return
        before = flat.chain[-1] if flat.chain else 0
        key = (before, id(seg), layer, index)
        chunk = self._chunks.get(key)
        if chunk is None or chunk.seg is not seg:
            chunk = self._chunk(seg, before, layer, index)
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

    def _emit_settings(self, flat: Flat, names: Sequence[str]) -> None:
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
