"""OpenAI Chat Completions request bodies: read into the neutral model, and write back.

Also reads any JSON object whose ``messages`` holds such a list (a mini-swe-agent trajectory, for
one); its other top-level keys are kept in ``settings`` so the object writes back whole.

Mapping: leading ``system``/``developer`` messages become the conversation's system blocks (one
`Text` per message, whose ``raw`` is the message dict); an assistant message becomes its
``reasoning_content`` (`Thinking`), its text, then its ``tool_calls`` (`ToolCall`); a ``tool``
message becomes a message of role ``tool`` holding one `ToolResult`. Other roles pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipse import jsonio
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

SYSTEM_ROLES = ("system", "developer")


# ---------------------------------------------------------------------------------------- read


def read_body(body: Any, *, source: str | None = None) -> Conversation:
    """A Chat Completions request body (or an object holding ``messages``) as a `Conversation`."""
    if not isinstance(body, Mapping):
        raise InputError("an OpenAI chat body must be a JSON object", path=source)
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise InputError("an OpenAI chat body needs a 'messages' list", path=source)
    system: list[Text | Other] = []
    index = 0
    while (
        index < len(raw_messages)
        and isinstance(raw_messages[index], Mapping)
        and raw_messages[index].get("role") in SYSTEM_ROLES
    ):
        system.append(
            Text(
                _flatten(raw_messages[index].get("content")), Origin.SYSTEM, raw=raw_messages[index]
            )
        )
        index += 1
    messages = tuple(
        read_message(m, position=i, source=source)
        for i, m in enumerate(raw_messages[index:], start=index)
    )
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("'tools' must be a list", path=source)
    tools = tuple(ToolDef(_tool_name(t), raw=t) for t in tools_raw)
    settings = {k: v for k, v in body.items() if k not in ("messages", "tools")}
    return Conversation(
        messages=messages,
        system=tuple(system),
        tools=tools,
        settings=settings,
        dialect="openai-chat",
        system_form="blocks" if system else "none",
        raw=body,
        meta={"system_messages": index},
    )


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if isinstance(function, Mapping):
            return str(function.get("name", ""))
        return str(tool.get("name", ""))
    return ""


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""


def read_message(raw: Any, *, position: int | None = None, source: str | None = None) -> Message:
    """One chat message dict as a `Message`; errors name the file and the message."""
    where = f"message {position}" if position is not None else None
    try:
        return _read_message(raw, where, source)
    except InputError as exc:
        if exc.path is None and source is not None:
            raise InputError(exc.detail, path=source, position=where) from exc
        raise


def _read_message(raw: Any, where: str | None, source: str | None) -> Message:
    if not isinstance(raw, Mapping):
        raise InputError("a message must be a JSON object", path=source, position=where)
    role = raw.get("role")
    if not isinstance(role, str):
        raise InputError("a message needs a string 'role'", path=source, position=where)
    if role == "tool":
        content = raw.get("content")
        form: ContentForm = "string" if isinstance(content, str) else "blocks"
        parsed: str | tuple[Block, ...] = (
            content if isinstance(content, str) else _read_parts(content, Origin.HARNESS)
        )
        result = ToolResult(str(raw.get("tool_call_id", "")), parsed, raw=raw)
        return Message(role, (result,), form, raw)
    origin = _origin_for(role)
    blocks: list[Block] = []
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(Thinking(reasoning))
    content = raw.get("content")
    form = "none"
    if isinstance(content, str):
        form = "string"
        if content or role != "assistant" or not raw.get("tool_calls"):
            blocks.append(Text(content, classify_user_text(content) if origin is None else origin))
    elif isinstance(content, list):
        form = "blocks"
        blocks.extend(_read_parts(content, origin))
    calls = raw.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise InputError("'tool_calls' must be a list", path=source, position=where)
    for call in calls or []:
        blocks.append(_read_call(call))
    return Message(role, tuple(blocks), form, raw)


def _origin_for(role: str) -> Origin | None:
    if role == "assistant":
        return Origin.AGENT
    if role == "user":
        return None  # classified per text
    if role in SYSTEM_ROLES:
        return Origin.SYSTEM
    return Origin.HARNESS


def _read_parts(parts: Any, origin: Origin | None) -> tuple[Block, ...]:
    out: list[Block] = []
    for part in parts if isinstance(parts, list) else []:
        if (
            isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            text = part["text"]
            out.append(Text(text, classify_user_text(text) if origin is None else origin, part))
        elif isinstance(part, Mapping):
            out.append(Other(str(part.get("type", "unknown")), raw=part))
        else:
            raise InputError(f"a content part that is not a JSON object: {str(part)[:40]!r}")
    return tuple(out)


def _read_call(call: Any) -> Block:
    if not isinstance(call, Mapping):
        raise InputError(f"a tool call that is not a JSON object: {str(call)[:40]!r}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        return Other(str(call.get("type", "tool_call")), raw=call)
    arguments = function.get("arguments")
    parsed: Any = arguments
    if isinstance(arguments, str):
        try:
            parsed = jsonio.loads(arguments) if arguments else {}
        except jsonio.JSONDecodeError:
            parsed = None
    return ToolCall(
        str(call.get("id", "")),
        str(function.get("name", "")),
        parsed,
        arguments if isinstance(arguments, str) else None,
        raw=call,
    )


# --------------------------------------------------------------------------------------- write


def write_body(conversation: Conversation) -> dict[str, Any]:
    """The `Conversation` as a Chat Completions body (a new dict)."""
    messages: list[Any] = [_write_system_block(b) for b in conversation.system]
    messages.extend(write_message(m) for m in conversation.messages)
    rendered: dict[str, Any] = {"messages": messages}
    if conversation.tools:
        rendered["tools"] = [
            t.raw if t.raw else {"type": "function", "function": {"name": t.name}}
            for t in conversation.tools
        ]
    elif conversation.raw is not None and "tools" in conversation.raw:
        original = conversation.raw["tools"]
        rendered["tools"] = original if original in (None, []) else []
    out: dict[str, Any] = {}
    order = list(conversation.raw) if conversation.raw is not None else []
    for key in order:
        if key in rendered:
            out[key] = rendered[key]
        elif key in conversation.settings:
            out[key] = conversation.settings[key]
    for key, value in conversation.settings.items():
        out.setdefault(key, value)
    for key, value in rendered.items():
        out.setdefault(key, value)
    return out


def _write_system_block(block: Text | Other) -> Mapping[str, Any]:
    raw = block.raw
    if isinstance(block, Other):
        return raw if raw is not None else {"role": "system", "content": ""}
    if raw is not None and raw.get("role") in SYSTEM_ROLES:
        if _flatten(raw.get("content")) == block.text:
            return raw
        return {**raw, "content": block.text}
    return {"role": "system", "content": block.text}


def write_message(message: Message) -> Mapping[str, Any]:
    """One `Message` as a chat message dict; the original dict itself when nothing changed."""
    if message.role == "tool":
        return _write_tool_message(message)
    texts = [b for b in message.blocks if isinstance(b, Text | Other)]
    calls = [_write_call(b) for b in message.blocks if isinstance(b, ToolCall)]
    thinking = "".join(b.text for b in message.blocks if isinstance(b, Thinking))
    content = _write_content(message, texts)
    raw = message.raw
    if raw is None:
        out = {"role": message.role, "content": content}
        if calls:
            out["tool_calls"] = calls
        if thinking:
            out["reasoning_content"] = thinking
        return out
    if _unchanged(raw, message.role, content, calls, thinking):
        return raw
    out = dict(raw)
    out["role"] = message.role
    out["content"] = content
    _set_or_drop(out, "tool_calls", calls or None, keep_none="tool_calls" in raw)
    _set_or_drop(out, "reasoning_content", thinking or None, keep_none="reasoning_content" in raw)
    return out


def _write_content(message: Message, texts: list[Text | Other]) -> Any:
    """A message's content in the form it was read in: parts, a string, or none."""
    if message.content_form == "blocks":
        return [_write_part(b) for b in texts]
    if texts:
        return "\n\n".join(b.text for b in texts if isinstance(b, Text))
    return "" if message.content_form == "string" else None


def _unchanged(
    raw: Mapping[str, Any], role: str, content: Any, calls: list[Any], thinking: str
) -> bool:
    """Whether the message as written would be ``raw`` itself."""
    old_calls = raw.get("tool_calls") or []
    return (
        raw.get("role") == role
        and _same(content, raw.get("content"))
        and len(old_calls) == len(calls)
        and all(a is b for a, b in zip(calls, old_calls, strict=True))
        and (raw.get("reasoning_content") or "") == thinking
    )


def _set_or_drop(out: dict[str, Any], key: str, value: Any, *, keep_none: bool) -> None:
    if value is not None:
        out[key] = value
    elif keep_none:
        out[key] = None
    else:
        out.pop(key, None)


def _same(new: Any, old: Any) -> bool:
    if isinstance(new, list):
        return (
            isinstance(old, list)
            and len(new) == len(old)
            and all(a is b for a, b in zip(new, old, strict=True))
        )
    return bool(new == old and type(new) is type(old))


def _write_part(block: Text | Other) -> Mapping[str, Any]:
    raw = block.raw
    if isinstance(block, Text):
        if raw is not None and raw.get("type") == "text" and raw.get("text") == block.text:
            return raw
        return {"type": "text", "text": block.text}
    return raw if raw is not None else {"type": block.type}


def _write_call(block: ToolCall) -> Mapping[str, Any]:
    raw = block.raw
    if raw is not None:
        function = raw.get("function")
        if (
            isinstance(function, Mapping)
            and raw.get("id") == block.id
            and function.get("name") == block.name
            and _same_arguments(function.get("arguments"), block)
        ):
            return raw
    arguments = block.arguments
    if arguments is None:
        arguments = jsonio.dumps(block.input).decode() if block.input is not None else "{}"
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": arguments},
    }


def _same_arguments(raw_arguments: Any, block: ToolCall) -> bool:
    if block.arguments is not None:
        return bool(raw_arguments == block.arguments)
    if not isinstance(raw_arguments, str):
        return False
    try:
        return bool(jsonio.loads(raw_arguments or "{}") == block.input)
    except jsonio.JSONDecodeError:
        return block.input is None


def write_block(block: Block) -> Mapping[str, Any]:
    """One block as the dict the dialect has for it: a tool call as a ``tool_calls`` entry, a
    tool result as a ``tool`` message, thinking as ``reasoning_content``, text as a part."""
    if isinstance(block, ToolCall):
        return _write_call(block)
    if isinstance(block, ToolResult):
        return _write_tool_message(Message("tool", (block,), "string", block.raw))
    if isinstance(block, Thinking):
        return {"reasoning_content": block.text}
    return _write_part(block)


def _write_tool_message(message: Message) -> Mapping[str, Any]:
    raw = message.raw
    results = [b for b in message.blocks if isinstance(b, ToolResult)]
    if len(results) != 1:
        text = "\n\n".join(b.text for b in message.blocks if isinstance(b, Text | ToolResult))
        call_id = results[0].call_id if results else ""
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    result = results[0]
    content: Any = (
        result.content
        if isinstance(result.content, str)
        else [_write_part(b) for b in result.content if isinstance(b, Text | Other)]
    )
    if (
        raw is not None
        and raw.get("tool_call_id") == result.call_id
        and _same(content, raw.get("content"))
    ):
        return raw
    out = dict(raw) if raw is not None else {"role": "tool"}
    out["tool_call_id"] = result.call_id
    out["content"] = content
    return out
