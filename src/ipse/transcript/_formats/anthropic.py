"""Anthropic Messages API request bodies: read into the neutral model, and write back.

Reading keeps every provider dict in ``raw``; writing emits ``raw`` for every block and message
whose fields still agree with it, so an unchanged conversation writes back JSON equal to the
input (unknown fields, ``cache_control`` and unknown block types included). A block whose fields
were changed is written from its fields, on top of its ``raw`` so extra keys survive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse.errors import InputError
from ipse.transcript._model import (
    Block,
    ContentForm,
    Conversation,
    Message,
    Origin,
    Other,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
)
from ipse.transcript._origin import classify_user_text

_STRUCTURE_KEYS = ("system", "tools", "messages")


# ---------------------------------------------------------------------------------------- read


def read_body(body: Any, *, source: str | None = None) -> Conversation:
    """A Messages API request body (a dict) as a `Conversation`."""
    if not isinstance(body, Mapping):
        raise InputError("an Anthropic request body must be a JSON object", path=source)
    messages_raw = body.get("messages")
    if not isinstance(messages_raw, list):
        raise InputError("an Anthropic request body needs a 'messages' list", path=source)
    messages = tuple(read_message(m, position=i, source=source) for i, m in enumerate(messages_raw))
    system, system_form = _read_system(body.get("system"), source)
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("'tools' must be a list", path=source)
    tools = tuple(
        ToolDef(name=str(t.get("name", "")) if isinstance(t, Mapping) else "", raw=t)
        for t in tools_raw
    )
    settings = {k: v for k, v in body.items() if k not in _STRUCTURE_KEYS}
    return Conversation(
        messages=messages,
        system=system,
        tools=tools,
        settings=settings,
        dialect="anthropic",
        system_form=system_form,
        raw=body,
    )


def _read_system(value: Any, source: str | None) -> tuple[tuple[Text | Other, ...], ContentForm]:
    if value is None:
        return (), "none"
    if isinstance(value, str):
        return (Text(value, Origin.SYSTEM),), "string"
    if isinstance(value, list):
        blocks: list[Text | Other] = []
        for item in value:
            if not isinstance(item, Mapping):
                raise InputError("a 'system' block that is not a JSON object", path=source)
            if item.get("type") == "text":
                blocks.append(Text(str(item.get("text", "")), Origin.SYSTEM, raw=item))
            else:
                blocks.append(Other(_type_of(item), raw=item))
        return tuple(blocks), "blocks"
    raise InputError("'system' must be a string or a list of blocks", path=source)


def read_message(raw: Any, *, position: int | None = None, source: str | None = None) -> Message:
    """One message dict (``{"role", "content"}``) as a `Message`."""
    where = f"message {position}" if position is not None else None
    if not isinstance(raw, Mapping):
        raise InputError("a message must be a JSON object", path=source, position=where)
    role = raw.get("role")
    if not isinstance(role, str):
        raise InputError("a message needs a string 'role'", path=source, position=where)
    content = raw.get("content")
    if isinstance(content, str):
        return Message(role, (_text(content, role, None),), "string", raw)
    if content is None:
        return Message(role, (), "none", raw)
    if not isinstance(content, list):
        raise InputError(
            "message content must be a string or a list of blocks", path=source, position=where
        )
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise InputError(
                f"content block {index} is not a JSON object", path=source, position=where
            )
    try:
        blocks = tuple(read_block(b, role) for b in content)
    except InputError as exc:
        if exc.path is None:
            raise InputError(exc.detail, path=source, position=where) from exc
        raise
    return Message(role, blocks, "blocks", raw)


def _text(text: str, role: str, raw: Mapping[str, Any] | None) -> Text:
    if role == "assistant":
        return Text(text, Origin.AGENT, raw)
    if role == "system":
        return Text(text, Origin.SYSTEM, raw)
    return Text(text, classify_user_text(text), raw)


def read_block(raw: Any, role: str) -> Block:
    """One content block dict as a neutral block."""
    if not isinstance(raw, Mapping):
        raise InputError(f"a content block that is not a JSON object: {str(raw)[:40]!r}")
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return _text(raw["text"], role, raw)
    if kind == "tool_use":
        return ToolCall(str(raw.get("id", "")), str(raw.get("name", "")), raw.get("input"), raw=raw)
    if kind == "tool_result":
        content = raw.get("content", "")
        parsed: str | tuple[Block, ...]
        if isinstance(content, list):
            parsed = tuple(read_block(b, "tool") for b in content)
        else:
            parsed = "" if content is None else str(content)
        return ToolResult(
            str(raw.get("tool_use_id", "")), parsed, bool(raw.get("is_error", False)), raw=raw
        )
    if kind == "thinking":
        signature = raw.get("signature")
        return Thinking(
            str(raw.get("thinking", "")),
            signature if isinstance(signature, str) else None,
            raw=raw,
        )
    if kind == "redacted_thinking":
        return Thinking("", None, redacted=True, raw=raw)
    return Other(str(kind), raw=raw)


def _type_of(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item.get("type", "unknown"))
    return type(item).__name__


# --------------------------------------------------------------------------------------- write


def write_body(conversation: Conversation) -> dict[str, Any]:
    """The `Conversation` as a Messages API request body (a new dict)."""
    rendered: dict[str, Any] = {"messages": [write_message(m) for m in conversation.messages]}
    if conversation.tools:
        rendered["tools"] = [t.raw if t.raw else {"name": t.name} for t in conversation.tools]
    elif conversation.raw is not None and "tools" in conversation.raw:
        original = conversation.raw["tools"]
        rendered["tools"] = original if original in (None, []) else []
    system = _write_system(conversation)
    if system is not None:
        rendered["system"] = system
    return _ordered_body(conversation, rendered)


def _ordered_body(conversation: Conversation, rendered: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys in the order of the original body; new keys after."""
    out: dict[str, Any] = {}
    settings = conversation.settings
    order: Sequence[str] = list(conversation.raw) if conversation.raw is not None else []
    for key in order:
        if key in rendered:
            out[key] = rendered[key]
        elif key in settings:
            out[key] = settings[key]
    for key, value in settings.items():
        out.setdefault(key, value)
    for key in ("system", "tools", "messages"):
        if key in rendered:
            out.setdefault(key, rendered[key])
    return out


def _write_system(conversation: Conversation) -> str | list[Any] | None:
    blocks = conversation.system
    if not blocks:
        return {"none": None, "blocks": [], "string": ""}[conversation.system_form]
    if conversation.system_form == "string" and len(blocks) == 1 and isinstance(blocks[0], Text):
        return blocks[0].text
    return [write_block(b) for b in blocks]


def write_message(message: Message) -> Mapping[str, Any]:
    """One `Message` as a message dict; the original dict itself when nothing changed."""
    content: str | list[Any] | None
    blocks = message.blocks
    if message.content_form == "string" and len(blocks) == 1 and isinstance(blocks[0], Text):
        content = blocks[0].text
    elif message.content_form == "none" and not blocks:
        content = None
    else:
        content = [write_block(b) for b in blocks]
    raw = message.raw
    if raw is not None:
        original = raw.get("content")
        if raw.get("role") == message.role and _same_content(content, original):
            return raw
        out = dict(raw)
        out["role"] = message.role
        if content is None:
            out.pop("content", None)
        else:
            out["content"] = content
        return out
    return {"role": message.role, "content": content if content is not None else []}


def _same_content(new: str | list[Any] | None, old: Any) -> bool:
    if isinstance(new, list):
        return (
            isinstance(old, list)
            and len(old) == len(new)
            and all(a is b for a, b in zip(new, old, strict=True))
        )
    return new == old and type(new) is type(old)


def write_block(block: Block) -> Mapping[str, Any]:
    """One block as a content block dict; its ``raw`` when the fields still agree with it."""
    if isinstance(block, Text):
        return _write_text(block)
    if isinstance(block, ToolCall):
        return _write_tool_call(block)
    if isinstance(block, ToolResult):
        return _write_tool_result(block)
    if isinstance(block, Thinking):
        return _write_thinking(block)
    return block.raw if block.raw is not None else {"type": block.type}


def _write_text(block: Text) -> Mapping[str, Any]:
    raw = block.raw
    if raw is None or raw.get("type") != "text":
        return {"type": "text", "text": block.text}
    if raw.get("text") == block.text:
        return raw
    return {**raw, "type": "text", "text": block.text}


def _write_tool_call(block: ToolCall) -> Mapping[str, Any]:
    raw = block.raw
    if (
        raw is not None
        and raw.get("type") in ("tool_use", "server_tool_use")
        and raw.get("id") == block.id
        and raw.get("name") == block.name
        and (raw.get("input") is block.input or raw.get("input") == block.input)
    ):
        return raw
    base = raw if raw is not None and raw.get("type") == "tool_use" else {}
    return {**base, "type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _write_thinking(block: Thinking) -> Mapping[str, Any]:
    raw = block.raw
    if block.redacted:
        if raw is not None and raw.get("type") == "redacted_thinking":
            return raw
        return {"type": "redacted_thinking", "data": ""}
    if (
        raw is not None
        and raw.get("type") == "thinking"
        and raw.get("thinking") == block.text
        and raw.get("signature") == block.signature
    ):
        return raw
    out: dict[str, Any] = {"type": "thinking", "thinking": block.text}
    if block.signature is not None:
        out["signature"] = block.signature
    return out


def _write_tool_result(block: ToolResult) -> Mapping[str, Any]:
    raw = block.raw
    content: str | list[Any]
    content = (
        block.content if isinstance(block.content, str) else [write_block(b) for b in block.content]
    )
    if (
        raw is not None
        and raw.get("type") == "tool_result"
        and raw.get("tool_use_id") == block.call_id
        and bool(raw.get("is_error", False)) == block.is_error
        and _same_content(content, "" if raw.get("content") is None else raw.get("content"))
    ):
        return raw
    out: dict[str, Any] = dict(raw) if raw is not None and raw.get("type") == "tool_result" else {}
    out.update({"type": "tool_result", "tool_use_id": block.call_id, "content": content})
    if block.is_error:
        out["is_error"] = True
    else:
        out.pop("is_error", None)
    return out
