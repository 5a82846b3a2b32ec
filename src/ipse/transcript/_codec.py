"""One codec per dialect: the only place that knows how a dialect spells a conversation.

A `Codec` reads a request body into a `Conversation` and writes a body, a message or a block
back, and answers the questions the mechanisms would otherwise answer by testing the dialect's
name: how a removed call or result is archived, which keys a stripped message drops, whether
tool results may span several messages, whether roles must alternate, how a body splits into
the positions the prompt cache sees, how a streamed answer ends or reports an error, how a
request's instructions are laid out. `codec(dialect)` is the one mapping from a name to its
codec; mechanisms ask it and never branch on the name themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from ipse import jsonio
from ipse.errors import UsageError
from ipse.transcript._formats import anthropic, openai_chat, openai_responses
from ipse.transcript._model import Block, ContentForm, Conversation, Dialect, Message, Other


@dataclass(frozen=True, slots=True)
class Positions:
    """A request body split into the parts the prompt cache sees, in the dialect's own dicts.

    ``system`` holds system blocks (one position each); ``system_messages`` the leading
    messages that carry the system prompt; ``messages`` the rest. ``per_message``: a message is
    one position (OpenAI) rather than one position per content block (Anthropic)."""

    tools: Any
    system: list[Any] = field(default_factory=list)
    system_messages: list[Any] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    per_message: bool = False
    system_source: Any = None  # the body's own system value (memoised by identity)


class RawCall(NamedTuple):
    """A tool call as it stands in a body's raw history: the index of the item (message) that
    holds it (``at``), its id, name, namespace (Responses' deferred tool namespaces) and input
    (a string for freeform tools and argument strings, an object for Anthropic)."""

    at: int
    id: str
    name: str
    namespace: str | None
    input: Any


class RawResult(NamedTuple):
    """A tool result in a body's raw history: the index of its item, its call's id, and its
    output as sent (a string, or a list of parts); ``at`` is its item's index."""

    at: int
    call_id: str
    output: Any


class Codec(Protocol):
    """What a mechanism may ask of a dialect."""

    @property
    def history_key(self) -> str:
        """The body key that holds the conversation's items (``messages`` or ``input``)."""
        ...

    @property
    def dialect(self) -> Dialect: ...

    @property
    def provider(self) -> str:
        """``anthropic`` or ``openai``: whose cache rules and prices apply."""
        ...

    @property
    def result_role(self) -> str | None:
        """The role of messages that hold only tool results, when the results of one turn's
        calls may come in several such messages; None when they come in the next message."""
        ...

    @property
    def alternates(self) -> bool:
        """Whether user and assistant messages must alternate."""
        ...

    @property
    def merges_turns(self) -> bool:
        """Whether two adjacent messages of one side read back as one message (a Responses
        body is a flat list of items, grouped into turns when read)."""
        ...

    @property
    def rejects_blank_text(self) -> bool:
        """Whether the API rejects text blocks that are only whitespace."""
        ...

    @property
    def needs_max_tokens(self) -> bool:
        """Whether a request body must carry ``max_tokens``."""
        ...

    @property
    def server_tool_types(self) -> frozenset[str]:
        """`Other` types of tools the provider runs itself (stripped like tool calls)."""
        ...

    @property
    def breakpoint_key(self) -> str | None:
        """The block key that marks a prompt-cache breakpoint (Anthropic's ``cache_control``);
        None where the dialect has no per-block breakpoints."""
        ...

    def read_body(self, body: Any, *, source: str | None = None) -> Conversation: ...

    def write_body(self, conversation: Conversation) -> dict[str, Any]: ...

    def write_message(self, message: Message) -> Any:
        """A message as the JSON that goes on the wire for it."""
        ...

    def write_block(self, block: Block) -> Mapping[str, Any]:
        """A block as the dialect's dict for it (a content block, a tool call, an item)."""
        ...

    def is_server_result(self, block: Block) -> bool:
        """Whether a block is the result of a server-side tool (stripped with its call)."""
        ...

    def result_raw(self, message: Message, block: Block) -> Mapping[str, Any]:
        """The dict a removed tool result is archived as."""
        ...

    def stripped_raw(self, message: Message, blocks: Sequence[Block]) -> Mapping[str, Any] | None:
        """The ``raw`` of a message rebuilt with fewer blocks (keys for removed parts dropped)."""
        ...

    def merged_form(self, first: ContentForm, second: ContentForm) -> ContentForm:
        """The content form of two neighbouring messages merged into one."""
        ...

    def tool(self, name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """A tool definition in the dialect's shape."""
        ...

    def positions(self, body: Mapping[str, Any]) -> Positions: ...

    def speaker(self, raw: Any) -> str | None:
        """The role a raw message (or item) of ``Positions.messages`` speaks in."""
        ...

    def raw_calls(self, items: Sequence[Any]) -> Iterator[RawCall]:
        """The tool calls of raw history items, in order (without reading the body)."""
        ...

    def raw_results(self, items: Sequence[Any]) -> Iterator[RawResult]:
        """The tool results of raw history items, in order."""
        ...

    @property
    def thinking_binds(self) -> bool:
        """Whether a thinking block can be bound to the prefix before it (on the models that
        bind: `ipse.handoff.wire.binds_thinking`), so a changed history must drop it."""
        ...

    def raw_items(self, message: Message) -> int:
        """How many raw history items a message read from a body stands for."""
        ...

    def raw_front(self, body: Mapping[str, Any]) -> Any:
        """The raw instructions of a body (system prompt, instructions, leading system
        messages), as sent: what identifies a conversation together with its first message."""
        ...

    def raw_answer(self, call: Block, text: str) -> Any:
        """The raw history item that answers ``call`` with ``text``."""
        ...

    def front(self, texts: Sequence[str]) -> dict[str, Any]:
        """The body keys that carry ``texts`` as a request's instructions, in order (what
        `raw_front` reads back; where they are messages, the history's first), a prompt-cache
        breakpoint after the last where the dialect marks breakpoints."""
        ...

    @property
    def stream_end(self) -> tuple[bytes, ...]:
        """Markers of a streamed answer's last event: a stream that has sent one is whole."""
        ...

    def stream_error(self, message: str) -> bytes:
        """The server-sent event that reports an error in a stream that has already begun."""
        ...


def _as_text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class _Anthropic:
    dialect: Dialect = "anthropic"
    history_key = "messages"
    provider = "anthropic"
    result_role: str | None = None
    alternates = True
    merges_turns = False
    rejects_blank_text = True
    needs_max_tokens = True
    server_tool_types = frozenset({"server_tool_use", "mcp_tool_use"})
    breakpoint_key: str | None = "cache_control"
    thinking_binds = True
    stream_end: tuple[bytes, ...] = (b"message_stop", b"event: error")

    def read_body(self, body: Any, *, source: str | None = None) -> Conversation:
        return anthropic.read_body(body, source=source)

    def write_body(self, conversation: Conversation) -> dict[str, Any]:
        return anthropic.write_body(conversation)

    def write_message(self, message: Message) -> Any:
        return anthropic.write_message(message)

    def write_block(self, block: Block) -> Mapping[str, Any]:
        return anthropic.write_block(block)

    def is_server_result(self, block: Block) -> bool:
        return isinstance(block, Other) and block.type.endswith("_tool_result")

    def result_raw(self, message: Message, block: Block) -> Mapping[str, Any]:
        return block.raw if block.raw is not None else anthropic.write_block(block)

    def stripped_raw(self, message: Message, blocks: Sequence[Block]) -> Mapping[str, Any] | None:
        return message.raw

    def merged_form(self, first: ContentForm, second: ContentForm) -> ContentForm:
        return "string" if first == second == "string" else "blocks"

    def tool(self, name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": name, "description": description, "input_schema": schema}

    def positions(self, body: Mapping[str, Any]) -> Positions:
        system = body.get("system")
        items: list[Any]
        if system is None or system == "" or system == []:
            items = []
        elif isinstance(system, str):
            items = [_as_text(system)]
        else:
            items = list(system) if isinstance(system, list) else [system]
        messages = _list(body.get("messages"))
        return Positions(body.get("tools"), items, [], messages, False, system)

    def speaker(self, raw: Any) -> str | None:
        return raw.get("role") if isinstance(raw, Mapping) else None

    def raw_calls(self, items: Sequence[Any]) -> Iterator[RawCall]:
        for index, block in _content_blocks(items, "assistant"):
            if block.get("type") == "tool_use":
                name = str(block.get("name", ""))
                yield RawCall(index, str(block.get("id", "")), name, None, block.get("input"))

    def raw_results(self, items: Sequence[Any]) -> Iterator[RawResult]:
        for index, block in _content_blocks(items, "user"):
            if block.get("type") == "tool_result":
                yield RawResult(index, str(block.get("tool_use_id", "")), block.get("content"))

    def raw_items(self, message: Message) -> int:
        return 1

    def raw_front(self, body: Mapping[str, Any]) -> Any:
        return body.get("system")

    def raw_answer(self, call: Block, text: str) -> Any:
        result = {"type": "tool_result", "tool_use_id": _call_id(call), "content": text}
        return {"role": "user", "content": [result]}

    def front(self, texts: Sequence[str]) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
        if blocks:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
        return {"system": blocks}

    def stream_error(self, message: str) -> bytes:
        error = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + jsonio.dumps(error) + b"\n\n"


def _call_id(call: Block) -> str:
    return str(getattr(call, "id", ""))


def _content_blocks(items: Sequence[Any], role: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for index, item in enumerate(items):
        if isinstance(item, Mapping) and item.get("role") == role:
            content = item.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, Mapping):
                        yield index, block


_CHAT_DROPPED_KEYS = ("tool_calls", "function_call", "reasoning_content", "reasoning")


class _OpenAIChat:
    dialect: Dialect = "openai-chat"
    history_key = "messages"
    provider = "openai"
    result_role: str | None = "tool"
    alternates = True
    merges_turns = False
    rejects_blank_text = False
    needs_max_tokens = False
    server_tool_types: frozenset[str] = frozenset()
    breakpoint_key: str | None = None
    thinking_binds = False
    stream_end: tuple[bytes, ...] = (b"[DONE]",)

    def read_body(self, body: Any, *, source: str | None = None) -> Conversation:
        return openai_chat.read_body(body, source=source)

    def write_body(self, conversation: Conversation) -> dict[str, Any]:
        return openai_chat.write_body(conversation)

    def write_message(self, message: Message) -> Any:
        return openai_chat.write_message(message)

    def write_block(self, block: Block) -> Mapping[str, Any]:
        return openai_chat.write_block(block)

    def is_server_result(self, block: Block) -> bool:
        return False

    def result_raw(self, message: Message, block: Block) -> Mapping[str, Any]:
        if message.role == "tool":
            return message.raw if message.raw is not None else openai_chat.write_message(message)
        return block.raw if block.raw is not None else openai_chat.write_block(block)

    def stripped_raw(self, message: Message, blocks: Sequence[Block]) -> Mapping[str, Any] | None:
        raw = message.raw
        if raw is None:
            return None
        drop = [k for k in _CHAT_DROPPED_KEYS if k in raw]
        if any(b.kind == "tool_call" for b in blocks):
            drop = [k for k in drop if k != "tool_calls"]
        return {k: v for k, v in raw.items() if k not in drop}

    def merged_form(self, first: ContentForm, second: ContentForm) -> ContentForm:
        return "blocks" if "blocks" in (first, second) else "string"

    def tool(self, name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        function = {"name": name, "description": description, "parameters": schema}
        return {"type": "function", "function": function}

    def positions(self, body: Mapping[str, Any]) -> Positions:
        messages = _list(body.get("messages"))
        n = 0
        while (
            n < len(messages)
            and isinstance(messages[n], Mapping)
            and messages[n].get("role") in openai_chat.SYSTEM_ROLES
        ):
            n += 1
        return Positions(body.get("tools"), [], messages[:n], messages[n:], True)

    def speaker(self, raw: Any) -> str | None:
        return raw.get("role") if isinstance(raw, Mapping) else None

    def raw_calls(self, items: Sequence[Any]) -> Iterator[RawCall]:
        for index, item in enumerate(items):
            calls = item.get("tool_calls") if isinstance(item, Mapping) else None
            if not isinstance(calls, list):
                continue
            for call in calls:
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    name = str(function.get("name", ""))
                    arguments = function.get("arguments")
                    yield RawCall(index, str(call.get("id", "")), name, None, arguments)

    def raw_results(self, items: Sequence[Any]) -> Iterator[RawResult]:
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and item.get("role") == "tool":
                yield RawResult(index, str(item.get("tool_call_id", "")), item.get("content"))

    def raw_items(self, message: Message) -> int:
        return 1

    def raw_front(self, body: Mapping[str, Any]) -> Any:
        messages = _list(body.get("messages"))
        return [
            m
            for m in messages
            if isinstance(m, Mapping) and m.get("role") in openai_chat.SYSTEM_ROLES
        ][:4]

    def raw_answer(self, call: Block, text: str) -> Any:
        return {"role": "tool", "tool_call_id": _call_id(call), "content": text}

    def front(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"messages": [{"role": "system", "content": text} for text in texts]}

    def stream_error(self, message: str) -> bytes:
        error = {"message": message, "type": "server_error", "param": None, "code": None}
        return b"data: " + jsonio.dumps({"error": error}) + b"\n\n"


class _OpenAIResponses:
    dialect: Dialect = "openai-responses"
    history_key = "input"
    provider = "openai"
    result_role: str | None = "tool"
    alternates = False
    merges_turns = True
    rejects_blank_text = False
    needs_max_tokens = False
    server_tool_types = openai_responses.HOSTED_TYPES
    breakpoint_key: str | None = None
    thinking_binds = False
    stream_end: tuple[bytes, ...] = (
        b"response.completed",
        b"response.failed",
        b"response.incomplete",
        b"event: error",
        b"[DONE]",
    )

    def read_body(self, body: Any, *, source: str | None = None) -> Conversation:
        return openai_responses.read_body(body, source=source)

    def write_body(self, conversation: Conversation) -> dict[str, Any]:
        return openai_responses.write_body(conversation)

    def write_message(self, message: Message) -> Any:
        return openai_responses.write_message(message)

    def write_block(self, block: Block) -> Mapping[str, Any]:
        return openai_responses.write_block(block)

    def is_server_result(self, block: Block) -> bool:
        return False

    def result_raw(self, message: Message, block: Block) -> Mapping[str, Any]:
        return block.raw if block.raw is not None else openai_responses.write_block(block)

    def stripped_raw(self, message: Message, blocks: Sequence[Block]) -> Mapping[str, Any] | None:
        return message.raw

    def merged_form(self, first: ContentForm, second: ContentForm) -> ContentForm:
        return "blocks"

    def tool(self, name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": "function", "name": name, "description": description, "parameters": schema}

    def positions(self, body: Mapping[str, Any]) -> Positions:
        instructions = body.get("instructions")
        system = [_as_text(instructions)] if isinstance(instructions, str) and instructions else []
        value = body.get("input")
        items = [{"role": "user", "content": value}] if isinstance(value, str) else _list(value)
        return Positions(body.get("tools"), system, [], items, True, instructions)

    def speaker(self, raw: Any) -> str | None:
        return openai_responses.side_of(raw) if isinstance(raw, Mapping) else None

    def raw_calls(self, items: Sequence[Any]) -> Iterator[RawCall]:
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and item.get("type") in openai_responses.CALL_TYPES:
                namespace = item.get("namespace")
                yield RawCall(
                    index,
                    str(item.get("call_id", item.get("id", ""))),
                    str(item.get("name", "")),
                    namespace if isinstance(namespace, str) else None,
                    item.get("arguments", item.get("input")),
                )

    def raw_results(self, items: Sequence[Any]) -> Iterator[RawResult]:
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and item.get("type") in openai_responses.OUTPUT_TYPES:
                yield RawResult(index, str(item.get("call_id", "")), item.get("output"))

    def raw_items(self, message: Message) -> int:
        return len(message.meta.get("items") or ())

    def raw_front(self, body: Mapping[str, Any]) -> Any:
        return body.get("instructions")

    def raw_answer(self, call: Block, text: str) -> Any:
        raw = getattr(call, "raw", None)
        kind = raw.get("type") if isinstance(raw, Mapping) else None
        output = f"{kind}_output" if kind in openai_responses.CALL_TYPES else None
        if output not in openai_responses.OUTPUT_TYPES:
            output = "function_call_output"
        return {"type": output, "call_id": _call_id(call), "output": text}

    def front(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"instructions": "\n\n".join(texts)}

    def stream_error(self, message: str) -> bytes:
        error = {"type": "error", "code": "server_error", "message": message}
        return b"event: error\ndata: " + jsonio.dumps(error) + b"\n\n"


_CODECS: dict[str, Codec] = {
    "anthropic": _Anthropic(),
    "openai-chat": _OpenAIChat(),
    "openai-responses": _OpenAIResponses(),
}
DIALECTS: tuple[Dialect, ...] = ("anthropic", "openai-chat", "openai-responses")
# Other names of a dialect: ``openai``, as options that choose between Anthropic's and OpenAI's
# shapes (``--format openai``) name Chat Completions.
_ALIASES = {"openai": "openai-chat"}


def codec(dialect: str) -> Codec:
    """The codec of a dialect (``openai`` stands for ``openai-chat``); `UsageError` for a name
    no codec has."""
    found = _CODECS.get(_ALIASES.get(dialect, dialect))
    if found is None:
        raise UsageError(f"no codec for {dialect!r}; known: {', '.join(DIALECTS)}")
    return found


def body_codec(body: Mapping[str, Any], provider: str) -> Codec:
    """The codec of a body sent to ``provider``, by its shape (cheap: no full sniffing)."""
    if provider == "anthropic":
        return _CODECS["anthropic"]
    if "input" in body and "messages" not in body:
        return _CODECS["openai-responses"]
    return _CODECS["openai-chat"]


__all__ = ["DIALECTS", "Codec", "Positions", "RawCall", "RawResult", "body_codec", "codec"]
