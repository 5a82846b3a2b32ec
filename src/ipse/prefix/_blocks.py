"""One block as a cache position sees it: the bytes it is hashed as, the text it is counted as,
its breakpoint, and the two hashes (of a block, and of a prefix through it).

A provider renders some blocks alike that JSON writes differently, and the bytes hashed here
are the rendered ones: ``cache_control`` is no part of a block (moving a breakpoint does not
change the prefix), a plain text block has one key order, and a per-message position (OpenAI,
Codex) with one plain text part is the string it renders as. The first block of a part is
hashed after a salt naming the part (``tools:``, ``system:``, a message's role), so the same
block said by someone else is another position. The fast hash is Python's own (stable within
one run, which is all a replay needs); the stable one is BLAKE2b, for hashes shown to people.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.jsonio import is_object
from ipse.transcript._shared import Codec, StoredMessage, without_payloads

IMAGE_TYPES = Names({"image", "image_url", "input_image", "document"})
IMAGE_KINDS = frozenset(IMAGE_TYPES)  # (for a value known to be a string: no Names call)
RUN_KINDS = frozenset({"tool_use", "tool_result"})  # a run of these is one lookback position
_TEXT_PARTS = Names({"text", "input_text", "output_text"})


def fast_hash(data: bytes) -> int:
    return hash(data)


def stable_hash(data: bytes) -> int:
    import hashlib  # (stable hashes are for the few requests shown to people: on use)

    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def fast_chain(parent: int, child: int) -> int:
    return hash((parent, child))


def stable_chain(parent: int, child: int) -> int:
    data = parent.to_bytes(8, "big", signed=False) + child.to_bytes(8, "big", signed=False)
    return stable_hash(data)


def dumps(value: Any) -> bytes:
    """A value's JSON bytes (its ``repr`` for what JSON cannot write)."""
    try:
        return jsonio.dumps(value)
    except TypeError:
        return repr(value).encode()


def without_breakpoint(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """The block without its ``cache_control``, and the breakpoint's TTL when it had one."""
    marker = raw.get("cache_control")
    if marker is None:
        return raw, None
    ttl = "5m"
    if isinstance(marker, Mapping) and marker.get("ttl") == "1h":
        ttl = "1h"
    return {k: v for k, v in raw.items() if k != "cache_control"}, ttl


def as_text(text: str) -> dict[str, str]:
    """A string content as the one text block it stands for (the provider renders both alike)."""
    return {"type": "text", "text": text}


def rendered_text(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """A plain text block in one key order: ``{"text", "type"}`` and ``{"type", "text"}`` are
    the same block to the provider."""
    if len(block) == 2 and block.get("type") == "text" and isinstance(block.get("text"), str):
        return as_text(block["text"])
    return block


def as_rendered(message: Mapping[str, Any]) -> Mapping[str, Any]:
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
        return dumps(raw).decode()
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return str(raw["text"])
    if kind == "thinking" and isinstance(raw.get("thinking"), str):
        return str(raw["thinking"])
    if kind == "tool_use":
        return f"{raw.get('name', '')} {dumps(raw.get('input')).decode()}"
    if kind == "tool_result":
        content = raw.get("content")
        if isinstance(content, list):
            return "\n".join(block_text(part) for part in content)
        return content if isinstance(content, str) else ""
    if "role" in raw:  # an OpenAI message as one position
        return _message_text(raw)
    return dumps(without_payloads(raw)).decode()


def _message_text(message: Mapping[str, Any]) -> str:
    """`block_text` of a whole message: its content's text, then each tool call's name and
    arguments."""
    content = message.get("content")
    parts = (
        [block_text(p) for p in content]
        if isinstance(content, list)
        else [block_text(content or "")]
    )
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(parts)


def salt(message: Mapping[str, Any]) -> bytes:
    """What a message's first block is hashed after: its role (a block means something else
    said by someone else)."""
    return f"{message.get('role', message.get('type', ''))}:".encode("utf-8", "surrogatepass")


def content_blocks(message: Mapping[str, Any]) -> list[Any]:
    """A message's blocks as positions: its list, else its text as the one block it is."""
    content = message.get("content")
    if isinstance(content, list) and content:
        return content
    return [as_text(content if isinstance(content, str) else "")]


def holds_image_in(message: Any) -> bool:
    """Whether a message's content holds an image (a message whose blocks were read and
    dropped says so by its notes: `ipse.transcript._formats.claude_code_stored`)."""
    if type(message) is StoredMessage:
        return any(isinstance(kind, str) and kind in IMAGE_KINDS for kind, _, _ in message.notes)
    content = message.get("content") if is_object(message) else None
    return isinstance(content, list) and holds_image(content)


def holds_image(content: list[Any]) -> bool:
    for block in content:  # (a loop: a generator costs a frame per block)
        if is_object(block):
            kind = block.get("type")
            if isinstance(kind, str) and kind in IMAGE_KINDS:
                return True
    return False


def last_assistant(messages: Sequence[Any], dialect: Codec) -> int:
    """The index of the last message the model wrote (-1: none)."""
    for i in range(len(messages) - 1, -1, -1):
        if dialect.speaker(messages[i]) == "assistant":
            return i
    return -1
