"""Build requests that keep their cached prefix: fixed order, stable bytes, append-only history.

An `Assembler` holds one session's request: tools, system prompt and settings fixed at the
start, history that only grows. Every part is canonicalised when it enters (keys sorted, a
fresh copy), so the same content always serializes to the same bytes. Changing the front goes
through an explicit call (`set_tools`, `set_system`, `set_settings`, `set_model`) that returns
what the change costs in cache; editing an earlier message raises `PrefixEdit` unless forced
(a correction belongs in a new message). Breakpoints (Anthropic) are placed by the assembler:
the end of the tools, the end of the system prompt, the previous turn's end (found again by the
next request's lookback) and the newest block; ``cache_control`` never enters the stored parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ipse import jsonio
from ipse._tokens import TokenCounter
from ipse.errors import PrefixEdit, UsageError
from ipse.prefix._hashing import Flattener
from ipse.prefix._rules import prices, rules

Dialect = Literal["anthropic", "openai"]


@dataclass(frozen=True, slots=True)
class CacheCost:
    """What a change to a fixed part costs: the tokens it invalidates, once, at write price."""

    change: str
    invalidates: str  # everything | system and messages | messages | nothing
    tokens: int
    usd: float

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "invalidates": self.invalidates,
            "tokens": self.tokens,
            "usd": round(self.usd, 6),
        }


def canonical(value: Any) -> Any:
    """A deep copy with every object's keys sorted: one content, one byte sequence."""
    try:
        return jsonio.loads_exact(jsonio.dumps(value, option=jsonio.OPT_SORT_KEYS))
    except TypeError as exc:
        raise UsageError(f"not JSON that a request can carry: {exc}") from exc


def _dumps(value: Any) -> bytes:
    return jsonio.dumps(value, option=jsonio.OPT_SORT_KEYS)


class Assembler:
    """One session's requests, assembled for the prompt cache.

    ``dialect``: ``anthropic`` (tools, system, messages; explicit breakpoints) or ``openai``
    (system messages first; automatic caching). ``ttl`` is the breakpoint TTL of the front
    (``5m`` or ``1h``); history breakpoints are always 5 minutes, after the front's.
    """

    def __init__(
        self,
        dialect: Dialect,
        model: str,
        *,
        system: str | Sequence[Mapping[str, Any]] = "",
        tools: Sequence[Mapping[str, Any]] = (),
        settings: Mapping[str, Any] | None = None,
        ttl: str = "5m",
        counter: TokenCounter | None = None,
    ) -> None:
        shape = _SHAPES.get(dialect)
        if shape is None:
            raise UsageError(f"unknown dialect {dialect!r}; known: {', '.join(_SHAPES)}")
        if ttl not in ("5m", "1h"):
            raise UsageError(f"unknown ttl {ttl!r}; known: 5m, 1h")
        self.dialect: Dialect = dialect
        self._shape = shape
        self.model = model
        self.ttl = ttl
        self._counter = counter
        self._system = self._system_blocks(system)
        self._tools = self._checked_tools(tools)
        self._settings = canonical(dict(settings or {}))
        self._messages: list[dict[str, Any]] = []

    # ------------------------------------------------------------------------ parts

    def _system_blocks(self, system: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(system, str):
            return [{"type": "text", "text": system}] if system else []
        return [_without_marker(canonical(block)) for block in system]

    def _checked_tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out = [_without_marker(canonical(tool)) for tool in tools]
        names = [_tool_name(t) for t in out]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UsageError(f"tools listed more than once: {', '.join(duplicates)}")
        return out

    @property
    def messages(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self._messages)

    # ------------------------------------------------------------------------ history

    def append(self, role: str, content: str | Sequence[Mapping[str, Any]]) -> int:
        """Append one message; returns its index. Content: a string or a list of blocks."""
        if role not in ("user", "assistant", "tool"):
            raise UsageError(f"a history message is user, assistant or tool, not {role!r}")
        if isinstance(content, str):
            blocks: Any = content
        else:
            blocks = [_without_marker(canonical(block)) for block in content]
        self._messages.append({"role": role, "content": blocks})
        return len(self._messages) - 1

    def append_message(self, message: Mapping[str, Any]) -> int:
        """Append a message dict as the provider shapes it (tool calls, tool results, ...)."""
        if not isinstance(message.get("role"), str):
            raise UsageError("a message needs a string 'role'")
        stored = canonical(dict(message))
        if isinstance(stored.get("content"), list):
            stored["content"] = [_without_marker(b) for b in stored["content"]]
        self._messages.append(stored)
        return len(self._messages) - 1

    def edit(
        self, index: int, content: str | Sequence[Mapping[str, Any]], *, force: bool = False
    ) -> CacheCost:
        """Replace an earlier message; raises `PrefixEdit` unless ``force``.

        Editing rewrites everything from that message on; append a correction instead."""
        if not 0 <= index < len(self._messages):
            raise UsageError(f"no message {index}; the history has {len(self._messages)}")
        cost = self._cost_from(("messages", index), f"edit message {index}", "messages")
        if not force:
            raise PrefixEdit(
                f"editing message {index} would rewrite {cost.tokens} cached tokens "
                f"(about ${cost.usd:.4f}); append a correction instead, or pass force=True"
            )
        role = self._messages[index]["role"]
        self._messages[index] = {
            "role": role,
            "content": content
            if isinstance(content, str)
            else [_without_marker(canonical(b)) for b in content],
        }
        return cost

    # ------------------------------------------------------------------------ the front

    def set_tools(self, tools: Sequence[Mapping[str, Any]]) -> CacheCost:
        """Replace the tool definitions: invalidates everything."""
        checked = self._checked_tools(tools)
        cost = self._cost_from(("tools", 0), "tools changed", "everything")
        self._tools = checked
        return cost

    def set_system(self, system: str | Sequence[Mapping[str, Any]]) -> CacheCost:
        """Replace the system prompt: invalidates it and everything after it."""
        blocks = self._system_blocks(system)
        cost = self._cost_from(("system", 0), "system changed", "system and messages")
        self._system = blocks
        return cost

    def set_settings(self, **changes: Any) -> CacheCost:
        """Change settings (None removes one); cache-relevant ones invalidate the messages."""
        relevant = [k for k in changes if k in rules(self._provider).settings()]
        updated = dict(self._settings)
        for key, value in changes.items():
            if value is None:
                updated.pop(key, None)
            else:
                updated[key] = canonical(value)
        if relevant and any(updated.get(k) != self._settings.get(k) for k in relevant):
            level = rules(self._provider).settings()[relevant[0]]
            start = ("messages", 0) if level == "messages" else ("tools", 0)
            invalidates = "messages" if level == "messages" else "everything"
            cost = self._cost_from(start, f"settings changed: {', '.join(relevant)}", invalidates)
        else:
            cost = CacheCost("settings changed", "nothing", 0, 0.0)
        self._settings = updated
        return cost

    def set_model(self, model: str) -> CacheCost:
        """Switch models: a separate cache, everything is written again."""
        cost = self._cost_from(("tools", 0), f"model {self.model} -> {model}", "everything")
        self.model = model
        return cost

    # ------------------------------------------------------------------------ output

    @property
    def _provider(self) -> str:
        return self._shape.provider

    def request(self) -> dict[str, Any]:
        """The request body, in the fixed order, with breakpoints placed (Anthropic)."""
        if not self._messages:
            raise UsageError("a request needs at least one message")
        return self._shape.build(self)

    def to_bytes(self) -> bytes:
        """The request body serialized deterministically (keys sorted)."""
        return _dumps(self.request())

    def prefix_bytes(self) -> bytes:
        """The cached part as the cache sees it, in order, without breakpoints: appending a
        message only ever adds bytes at the end of this."""
        parts = [_dumps(self.model), _dumps(self._tools), _dumps(self._system)]
        relevant = rules(self._provider).settings()
        parts.append(_dumps({k: v for k, v in self._settings.items() if k in relevant}))
        parts.extend(_dumps(m) for m in self._messages)
        return b"\n".join(parts)

    def _anthropic(self) -> dict[str, Any]:
        marker: dict[str, Any] = {"type": "ephemeral"}
        front = {"type": "ephemeral", "ttl": "1h"} if self.ttl == "1h" else marker
        tools = [dict(t) for t in self._tools]
        system = [dict(b) for b in self._system]
        if system:
            system[-1]["cache_control"] = front
        elif tools:
            tools[-1]["cache_control"] = front
        messages = [dict(m) for m in self._messages]
        marks = [len(messages) - 1]
        previous = _previous_user(messages)
        if previous is not None:
            marks.insert(0, previous)
        for index in marks:
            messages[index] = _marked(messages[index], marker)
        body: dict[str, Any] = {"model": self.model}
        if tools:
            body["tools"] = tools
        if system:
            body["system"] = system
        body.update({k: v for k, v in self._settings.items() if k not in ("model", "messages")})
        body["messages"] = messages
        return body

    def _openai(self) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if self._system:
            text = "\n\n".join(str(b.get("text", "")) for b in self._system)
            messages.append({"role": "system", "content": text})
        messages.extend(dict(m) for m in self._messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self._tools:
            body["tools"] = [dict(t) for t in self._tools]
        body.update({k: v for k, v in self._settings.items() if k not in ("model", "messages")})
        return body

    def _cost_from(self, start: tuple[str, int], change: str, invalidates: str) -> CacheCost:
        """Tokens from ``start`` to the end of the current request, at the write price."""
        if not self._messages:
            return CacheCost(change, invalidates, 0, 0.0)
        body = self.request()
        flat = Flattener(rules(self._provider), self._counter).flatten(body)
        layer, index = start
        offset = 1 if self._shape.system_message and self._system else 0
        position = len(flat.where)
        for p, where in enumerate(flat.where):
            if (
                layer == "tools"
                or (layer == "system" and where[0] != "tools")
                or (where[0] in ("history", "input") and where[1] >= index + offset)
            ):
                position = p
                break
        tokens = flat.total - flat.tokens_before(position)
        price = prices().price(self.model, self._provider)[0]
        table = rules(self._provider)
        multiplier = table.write_multiplier("5m") if self._shape.priced_writes else 1.0
        saved = table.read_multiplier(self.model)
        usd = price * tokens * (multiplier - saved) / 1_000_000
        return CacheCost(change, invalidates, tokens, usd)


@dataclass(frozen=True, slots=True)
class _Shape:
    """How one dialect lays out an assembled request."""

    provider: str
    build: Callable[[Assembler], dict[str, Any]]
    system_message: bool  # the system prompt travels as a leading message
    priced_writes: bool  # a cache write costs more than plain input


_SHAPES: dict[str, _Shape] = {
    "anthropic": _Shape("anthropic", Assembler._anthropic, False, True),
    "openai": _Shape("openai", Assembler._openai, True, False),
}


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name", ""))
    return str(tool.get("name", ""))


def _without_marker(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def _previous_user(messages: list[dict[str, Any]]) -> int | None:
    for index in range(len(messages) - 2, -1, -1):
        if messages[index]["role"] == "user":
            return index
    return None


def _marked(message: dict[str, Any], marker: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        blocks = list(content)
    else:
        return message
    blocks[-1] = {**blocks[-1], "cache_control": marker}
    return {**message, "content": blocks}
