"""OpenAI Responses API request bodies: read into the neutral model, and write back.

A Responses body holds ``instructions`` (the system prompt, a string), ``tools``, settings, and
``input``: a string, or a list of items. Items are messages (``role`` plus content parts:
``input_text`` / ``output_text`` are `Text`, other parts `Other`), ``reasoning`` (`Thinking`:
the summary's text, ``encrypted_content`` as the signature), calls (``function_call``,
``custom_tool_call``, ``local_shell_call``: `ToolCall`) and their outputs (`ToolResult`, linked
by ``call_id``), hosted tools that run on the provider's side (``web_search_call``, ...: `Other`,
stripped like Anthropic's server tools), and item types not known yet (`Other`, passed through).

Items are grouped into messages the way the mechanisms reason about turns: consecutive
assistant-side items (assistant messages, reasoning, calls) form one ``assistant`` message;
consecutive outputs form one ``tool`` message; every other message item is a message of its own.
A grouped message remembers the items it was read from (``meta["items"]``) and the blocks they
gave; while its blocks are those very blocks it writes back those very items, so an unchanged
body writes back byte for byte. A changed message is written item by item from its blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse import jsonio
from ipse._names import Names
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

CALL_TYPES = Names({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_TYPES = Names({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
# Tools the provider runs itself: a call item with no output item in the input.
HOSTED_TYPES = Names(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "computer_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
_PART_TYPES = Names({"refusal", "text", "summary_text"})
_STRUCTURE_KEYS = ("instructions", "input", "tools")


def is_part(block: Block) -> bool:
    """Whether a block is a content part of a message item (else it is an item of its own)."""
    if isinstance(block, Text):
        return True
    if isinstance(block, Other):
        kind = block.type
        return kind.startswith(("input_", "output_")) or kind in _PART_TYPES
    return False


# ---------------------------------------------------------------------------------------- read


def read_body(body: Any, *, source: str | None = None) -> Conversation:
    """A Responses API request body (a dict) as a `Conversation`."""
    if not isinstance(body, Mapping):
        raise InputError("an OpenAI Responses body must be a JSON object", path=source)
    value = body.get("input")
    if isinstance(value, str):
        messages: tuple[Message, ...] = (
            Message("user", (Text(value, classify_user_text(value)),), "string"),
        )
    elif isinstance(value, list):
        messages = tuple(read_items(value, source=source))
    else:
        raise InputError("an OpenAI Responses body needs an 'input' string or list", path=source)
    instructions = body.get("instructions")
    system: tuple[Text | Other, ...] = ()
    system_form: ContentForm = "none"
    if isinstance(instructions, str):
        system, system_form = (Text(instructions, Origin.SYSTEM),), "string"
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("'tools' must be a list", path=source)
    tools = tuple(ToolDef(_tool_name(t), raw=t) for t in tools_raw)
    structure = _STRUCTURE_KEYS if isinstance(instructions, str) else _STRUCTURE_KEYS[1:]
    settings = {k: v for k, v in body.items() if k not in structure}
    return Conversation(
        messages=messages,
        system=system,
        tools=tools,
        settings=settings,
        dialect="openai-responses",
        system_form=system_form,
        raw=body,
    )


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        return str(tool.get("name") or tool.get("type") or "")
    return ""


def side_of(item: Mapping[str, Any]) -> str | None:
    """The role an item speaks in: a message's role, ``assistant`` for what the model produced,
    ``tool`` for outputs; None for item types not known (they join their neighbours)."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = item.get("role")
        return role if isinstance(role, str) else None
    if kind in CALL_TYPES or kind in HOSTED_TYPES or kind == "reasoning":
        return "assistant"
    if kind in OUTPUT_TYPES:
        return "tool"
    return None


def read_items(
    items: Sequence[Any], *, source: str | None = None, lines: Sequence[int] | None = None
) -> list[Message]:
    """Input items as grouped messages (see the module's docstring)."""
    out: list[Message] = []
    group: list[tuple[Mapping[str, Any], tuple[Block, ...], int | None]] = []
    role: str | None = None
    for n, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(
                "an input item that is not a JSON object", path=source, position=f"item {n}"
            )
        side = side_of(item)
        alone = side not in (None, "assistant", "tool")
        if group and (alone or (side is not None and side != role)):
            out.append(_grouped(role or "user", group))
            group = []
        if not group:
            role = side or "user"
        group.append((item, read_item(item, role or "user"), lines[n] if lines else None))
        if alone:
            out.append(_grouped(role or "user", group))
            group = []
    if group:
        out.append(_grouped(role or "user", group))
    return out


def _grouped(
    role: str, group: Sequence[tuple[Mapping[str, Any], tuple[Block, ...], int | None]]
) -> Message:
    blocks = tuple(b for _, item_blocks, _ in group for b in item_blocks)
    meta: dict[str, Any] = {"items": tuple(item for item, _, _ in group), "blocks": blocks}
    if any(line is not None for _, _, line in group):
        meta["lines"] = [line for _, _, line in group]
    return Message(role, blocks, "blocks", None, meta)


def read_item(item: Mapping[str, Any], role: str) -> tuple[Block, ...]:
    """One input item as the blocks it holds."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        return _message_blocks(item, role)
    if kind == "reasoning":
        return (_reasoning(item),)
    if kind in CALL_TYPES:
        return (_call(item, str(kind)),)
    if kind in OUTPUT_TYPES:
        return (_output(item),)
    return (Other(str(kind or "unknown"), raw=item),)


def _message_blocks(item: Mapping[str, Any], group_role: str) -> tuple[Block, ...]:
    role = item.get("role")
    role = role if isinstance(role, str) else group_role
    content = item.get("content")
    if isinstance(content, str):
        return (_text(content, role, None),)
    return tuple(_part(part, role) for part in content) if isinstance(content, list) else ()


def _text(text: str, role: str, raw: Mapping[str, Any] | None) -> Text:
    if role == "assistant":
        return Text(text, Origin.AGENT, raw)
    if role in ("developer", "system"):
        return Text(text, Origin.HARNESS, raw)
    return Text(text, classify_user_text(text), raw)


def _part(part: Any, role: str) -> Block:
    if not isinstance(part, Mapping):
        raise InputError(f"a content part that is not a JSON object: {str(part)[:40]!r}")
    if isinstance(part.get("text"), str) and part.get("type", "input_text") in (
        "input_text",
        "output_text",
        "text",
    ):
        return _text(part["text"], role, part)
    return Other(str(part.get("type", "unknown")), raw=part)


def summary_text(item: Mapping[str, Any]) -> str:
    """The readable text of a reasoning item: its summary, else its content."""
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list):
            text = "\n\n".join(
                str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("text")
            )
            if text:
                return text
    return ""


def _reasoning(item: Mapping[str, Any]) -> Thinking:
    text = summary_text(item)
    encrypted = item.get("encrypted_content")
    signature = encrypted if isinstance(encrypted, str) else None
    return Thinking(text, signature, redacted=not text, raw=item)


def _call(item: Mapping[str, Any], kind: str) -> ToolCall:
    call_id = str(item.get("call_id", item.get("id", "")))
    if kind == "local_shell_call":
        return ToolCall(call_id, "local_shell", item.get("action"), raw=item)
    arguments = item.get("arguments", item.get("input"))
    parsed: Any = arguments
    if kind == "function_call" and isinstance(arguments, str):
        try:
            parsed = jsonio.loads(arguments) if arguments else {}
        except jsonio.JSONDecodeError:
            parsed = None
    return ToolCall(
        call_id,
        str(item.get("name", "")),
        parsed,
        arguments if isinstance(arguments, str) else None,
        raw=item,
    )


def _output(item: Mapping[str, Any]) -> ToolResult:
    output = item.get("output")
    content: str | tuple[Block, ...]
    if isinstance(output, list):
        content = tuple(_part(p, "tool") for p in output)
    elif isinstance(output, str):
        content = output
    else:
        content = "" if output is None else jsonio.dumps(output).decode()
    return ToolResult(str(item.get("call_id", "")), content, raw=item)


# --------------------------------------------------------------------------------------- write


def write_body(conversation: Conversation) -> dict[str, Any]:
    """The `Conversation` as a Responses API request body (a new dict)."""
    rendered: dict[str, Any] = {"input": _write_input(conversation)}
    if conversation.system:
        rendered["instructions"] = "\n\n".join(
            b.text for b in conversation.system if isinstance(b, Text)
        )
    if conversation.tools:
        rendered["tools"] = [t.raw if t.raw else {"name": t.name} for t in conversation.tools]
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
    for key in ("instructions", "tools", "input"):
        if key in rendered:
            out.setdefault(key, rendered[key])
    return out


def _write_input(conversation: Conversation) -> str | list[Any]:
    messages = conversation.messages
    if len(messages) == 1 and messages[0].content_form == "string":
        only = messages[0].blocks
        if len(only) == 1 and isinstance(only[0], Text):
            return only[0].text
    return [item for m in messages for item in write_message(m)]


def write_message(message: Message) -> list[Mapping[str, Any]]:
    """One grouped message as its input items; the items it was read from when unchanged."""
    items = message.meta.get("items")
    original = message.meta.get("blocks")
    if items is not None and original is not None and _identical(message.blocks, original):
        return list(items)
    if message.content_form == "string":
        return [{"role": message.role, "content": message.text}]
    out: list[Mapping[str, Any]] = []
    run: list[Block] = []
    for block in message.blocks:
        if is_part(block):
            run.append(block)
            continue
        if run:
            out.extend(_message_items(message, run))
            run = []
        out.append(write_block(block))
    if run:
        out.extend(_message_items(message, run))
    return out


def _identical(new: Sequence[Any], old: Sequence[Any]) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True))


def _message_items(message: Message, run: Sequence[Block]) -> list[Mapping[str, Any]]:
    """Message items for a run of parts: an original item where its parts are all there
    unchanged, a new message item for the rest."""
    by_first: dict[int, Mapping[str, Any]] = {}
    for item in message.meta.get("items") or ():
        content = item.get("content")
        if isinstance(content, list) and content:
            by_first[id(content[0])] = item
    parts = [write_part(b, message.role) for b in run]
    out: list[Mapping[str, Any]] = []
    pending: list[Mapping[str, Any]] = []
    i = 0
    while i < len(parts):
        item = by_first.get(id(parts[i]))
        content = item.get("content") if item is not None else None
        if (
            item is not None
            and isinstance(content, list)
            and _identical(parts[i : i + len(content)], content)
        ):
            if pending:
                out.append(_new_message(message.role, pending))
                pending = []
            out.append(item)
            i += len(content)
            continue
        pending.append(parts[i])
        i += 1
    if pending:
        out.append(_new_message(message.role, pending))
    return out


def _new_message(role: str, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": parts}


def write_part(block: Block, role: str) -> Mapping[str, Any]:
    """A `Text` or part-level `Other` as a content part."""
    raw = block.raw
    if isinstance(block, Text):
        if raw is not None and raw.get("text") == block.text:
            return raw
        kind = "output_text" if role == "assistant" else "input_text"
        base = dict(raw) if raw is not None else {"type": kind}
        base["text"] = block.text
        return base
    return raw if raw is not None else {"type": getattr(block, "type", "unknown")}


def write_block(block: Block) -> Mapping[str, Any]:
    """One block as an input item (a `Text` as a message item of its own)."""
    raw = block.raw
    if isinstance(block, Text):
        role = "assistant" if block.origin is Origin.AGENT else "user"
        return _new_message(role, [write_part(block, role)])
    if isinstance(block, ToolCall):
        return _write_call(block)
    if isinstance(block, ToolResult):
        return _write_output(block)
    if isinstance(block, Thinking):
        return _write_reasoning(block)
    if raw is not None:
        return raw
    return {"type": block.type}


def _write_call(block: ToolCall) -> Mapping[str, Any]:
    raw = block.raw
    if (
        raw is not None
        and str(raw.get("call_id", raw.get("id", ""))) == block.id
        and _same_call(raw, block)
    ):
        return raw
    if raw is not None and raw.get("type") == "custom_tool_call":
        return {**raw, "call_id": block.id, "name": block.name, "input": block.arguments or ""}
    arguments = block.arguments
    if arguments is None:
        arguments = jsonio.dumps(block.input).decode() if block.input is not None else "{}"
    return {
        "type": "function_call",
        "call_id": block.id,
        "name": block.name,
        "arguments": arguments,
    }


def _same_call(raw: Mapping[str, Any], block: ToolCall) -> bool:
    if raw.get("type") == "local_shell_call":
        return block.name == "local_shell" and raw.get("action") == block.input
    if raw.get("name") != block.name:
        return False
    arguments = raw.get("arguments", raw.get("input"))
    if block.arguments is not None:
        return bool(arguments == block.arguments)
    return not isinstance(arguments, str) and arguments == block.input


def _write_output(block: ToolResult) -> Mapping[str, Any]:
    raw = block.raw
    output: str | list[Any] = (
        block.content
        if isinstance(block.content, str)
        else [write_part(b, "tool") for b in block.content]
    )
    if raw is not None and raw.get("call_id") == block.call_id:
        old = raw.get("output")
        if _identical(output, old) if isinstance(output, list) and isinstance(old, list) else False:
            return raw
        if isinstance(output, str) and (old == output or _read_same(old, output)):
            return raw
    kind = raw.get("type") if raw is not None else None
    base = dict(raw) if raw is not None else {}
    base.update(
        {"type": kind or "function_call_output", "call_id": block.call_id, "output": output}
    )
    return base


def _read_same(old: Any, text: str) -> bool:
    """An output that was not a string reads as its JSON; unchanged when that JSON is the text."""
    return (
        old is not None and not isinstance(old, str | list) and jsonio.dumps(old).decode() == text
    )


def _write_reasoning(block: Thinking) -> Mapping[str, Any]:
    raw = block.raw
    if (
        raw is not None
        and summary_text(raw) == block.text
        and (raw.get("encrypted_content") == block.signature or block.signature is None)
    ):
        return raw
    out: dict[str, Any] = {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": block.text}] if block.text else [],
    }
    if block.signature is not None:
        out["encrypted_content"] = block.signature
    return out
