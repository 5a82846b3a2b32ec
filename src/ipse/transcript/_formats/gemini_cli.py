"""Gemini CLI chat sessions and checkpoints, read only.

Checked against google-gemini/gemini-cli 0.56.0-nightly (5411f11,
``packages/core/src/services/chatRecording{Service,Types}.ts``, ``core/logger.ts``,
``utils/checkpointUtils.ts``). Shapes read:

* Session, JSONL (0.39 on, ``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.jsonl``):
  a metadata line (``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``, ``kind``),
  then message records (``id``, ``timestamp``, ``type``, ``content``), ``{"$set": {...}}``
  metadata updates (a ``$set.messages`` replaces the history, as after ``/compress``) and
  ``{"$rewindTo": id}`` (drops that message and every later one). A record with an id seen
  before replaces it (Gemini CLI rewrites a message as its tool calls finish).
* Session, JSON (before 0.39, ``session-*.json``): one ``ConversationRecord`` object with the
  same metadata and a ``messages`` array.
* ``/chat save`` checkpoints (``checkpoint-<tag>.json``): ``{"history": [Content],
  "authType"}``, or a bare array of ``Content`` in older versions.
* ``/restore`` checkpoints (``checkpoints/<time>-<file>-<tool>.json``): ``{history (UI items),
  clientHistory: [Content], commitHash, toolCall: {name, args}, messageId}``; the conversation
  is ``clientHistory``.

Message records: ``type`` ``user`` (the human; ``content`` a string, a part or a list of parts),
``gemini`` (the model: ``content``, ``thoughts`` (``subject``, ``description``, ``timestamp``)
read as thinking, ``toolCalls`` (``id``, ``name``, ``args``, ``result`` (function-response
parts), ``status``, ``timestamp``, ...) read as calls followed by one tool message per result,
an ``error`` or ``cancelled`` status marking the result an error), ``tokens`` (``input``,
``output``, ``cached``, ``thoughts``, ``tool``, ``total``) and ``model``), and ``info``,
``error``, ``warning`` (shown to the user, never sent to the model: skipped and counted).

Gemini CLI 0.61 (checked against the bundle of @google/gemini-cli 0.61: ``getInitialChatHistory``,
``updateMessagesFromHistory``, ``recordSyntheticMessage``): the history starts with the
environment context it injects, a ``user`` message whose text opens with ``<session_context>``
(written through ``$set.messages``); it is the harness's text, not the human's (as is a
``<hook_context>`` message). Each function response sent back is recorded again as a ``user``
message holding only ``functionResponse`` parts: it is read as the tool result when no model
record's ``toolCalls`` carries that result, and never as a user message. A user message with
nothing in it is skipped and counted.

``Content`` (the Gemini API's): ``role`` ``user`` or ``model`` and ``parts``: ``text`` (with
``thought: true`` a thought), ``functionCall`` (``name``, ``args``, ``id``),
``functionResponse`` (``name``, ``response``, ``id``); calls without an id are matched to the
next response of the same name. Other parts (``inlineData``, ``fileData``, ...) are kept as
`Other` blocks.

The conversation is read only: Gemini's requests are ``generateContent`` bodies, a dialect ipse
does not write, and the thought signatures Gemini needs back are not recorded in a session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.errors import InputError
from ipse.transcript._jsonl import iter_jsonl, parse_json
from ipse.transcript._model import (
    Block,
    Conversation,
    Message,
    Origin,
    Other,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from ipse.transcript._origin import classify_user_text

_UI_ONLY = Names({"info", "error", "warning"})


def looks_like_session(record: Mapping[str, Any]) -> bool:
    """A session's metadata line or whole legacy record."""
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def looks_like_checkpoint(document: Any) -> bool:
    """A ``/chat save`` or ``/restore`` checkpoint, or a bare list of Content."""
    if isinstance(document, Mapping):
        if isinstance(document.get("clientHistory"), list) and "toolCall" in document:
            return True
        history = document.get("history")
        return isinstance(history, list) and _contents(history)
    return isinstance(document, list) and _contents(document)


def _contents(items: list[Any]) -> bool:
    head = items[:20]
    return bool(head) and all(
        isinstance(i, Mapping) and isinstance(i.get("parts"), list) for i in head
    )


# ------------------------------------------------------------------------------------ sessions


def read_session_records(
    path: Path, data: bytes, warnings: list[str] | None = None
) -> list[Mapping[str, Any]]:
    """The live message records of a session file (JSONL or legacy JSON)."""
    if not (_is_jsonl(data) and b"\n" in data.strip()):
        document = parse_json(data, path)
        messages = document.get("messages") if isinstance(document, Mapping) else None
        return [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []
    live: dict[str, Mapping[str, Any]] = {}
    for record in iter_jsonl(data, path, warnings=warnings):
        live = _applied(live, record.data)
    return list(live.values())


def _applied(
    live: dict[str, Mapping[str, Any]], value: Mapping[str, Any]
) -> dict[str, Mapping[str, Any]]:
    """The live records by id after one record of the file: a rewind drops the records from
    the one it names on (all, when it names none live), a ``$set`` of the messages replaces
    them, a message record adds or replaces itself, a whole session record its messages."""
    rewind = value.get("$rewindTo")
    if isinstance(rewind, str):
        keys = list(live)
        for key in keys[keys.index(rewind) :] if rewind in live else keys:
            del live[key]
        return live
    update = value.get("$set")
    if isinstance(update, Mapping):
        messages = update.get("messages")
        if isinstance(messages, list):
            return {str(m["id"]): m for m in messages if isinstance(m, Mapping) and "id" in m}
        return live
    if isinstance(value.get("id"), str):
        live[value["id"]] = value
    elif looks_like_session(value) and isinstance(value.get("messages"), list):
        for m in value["messages"]:
            if isinstance(m, Mapping) and isinstance(m.get("id"), str):
                live[m["id"]] = m
    return live


def _is_jsonl(data: bytes) -> bool:
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        jsonio.loads(first)
    except jsonio.JSONDecodeError:
        return False
    return True


def read_session(path: str | Path, data: bytes, warnings: list[str] | None = None) -> Conversation:
    """A Gemini CLI session file as a read-only conversation."""
    p = Path(path)
    messages: list[Message] = []
    skipped: Counter[str] = Counter()
    model: str | None = None
    answered: set[str] = set()  # call ids whose result a model record carries
    called: set[str] = set()  # call ids of the model records read so far
    for position, record in enumerate(read_session_records(p, data, warnings)):
        kind = record.get("type")
        meta = {"index": position, "id": record.get("id"), "timestamp": record.get("timestamp")}
        if kind == "user":
            blocks = _parts(record.get("content"), "user")
            responses = _responses(record.get("content"), called, answered)
            messages.extend(responses)
            if blocks:
                messages.append(Message("user", tuple(blocks), "blocks", meta=meta))
            elif not responses and not _has_responses(record.get("content")):
                skipped["empty user message"] += 1
        elif kind == "gemini":
            if isinstance(record.get("model"), str):
                model = record["model"]
                meta["model"] = model
            if isinstance(record.get("tokens"), Mapping):
                meta["tokens"] = record["tokens"]
            read = _gemini_record(record, meta)
            answered.update(
                b.call_id for m in read[1:] for b in m.blocks if isinstance(b, ToolResult)
            )
            called.update(b.id for b in read[0].blocks if isinstance(b, ToolCall))
            messages.extend(read)
        else:
            skipped[str(kind)] += 1
    return _conversation(p, messages, model, {"skipped": dict(skipped), "kind": "session"})


def _gemini_record(record: Mapping[str, Any], meta: dict[str, Any]) -> list[Message]:
    blocks: list[Block] = []
    thoughts = record.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else ():
        if isinstance(thought, Mapping):
            subject, description = thought.get("subject"), thought.get("description")
            text = "\n\n".join(str(t) for t in (subject, description) if t)
            blocks.append(Thinking(text))
    blocks.extend(_parts(record.get("content"), "model"))
    results: list[Message] = []
    for call in record.get("toolCalls") or []:
        if not isinstance(call, Mapping):
            continue
        call_id = str(call.get("id") or "")
        args = call.get("args")
        blocks.append(ToolCall(call_id, str(call.get("name", "")), args, _dumps(args)))
        status = call.get("status")
        if call.get("result") is None and status not in ("error", "cancelled"):
            continue  # not answered yet: the function response, when recorded, answers it
        text = _response_text(call.get("result"))
        results.append(
            Message(
                "tool",
                (ToolResult(call_id, text, is_error=status in ("error", "cancelled")),),
                "string",
                meta={"timestamp": call.get("timestamp"), "status": status},
            )
        )
    return [Message("assistant", tuple(blocks), "blocks", meta=meta), *results]


def _function_responses(content: Any) -> list[Mapping[str, Any]]:
    parts = content if isinstance(content, list) else [content]
    return [
        p["functionResponse"]
        for p in parts
        if isinstance(p, Mapping) and isinstance(p.get("functionResponse"), Mapping)
    ]


def _has_responses(content: Any) -> bool:
    return bool(_function_responses(content))


def _responses(content: Any, called: set[str], answered: set[str]) -> list[Message]:
    """The function responses a ``user`` record sends back (Gemini CLI records each again as a
    user message): a tool message each for a call a model record made, unless that record's
    ``toolCalls`` already carries the result."""
    out = []
    for response in _function_responses(content):
        call_id = str(response.get("id") or "")
        if call_id not in called or call_id in answered:
            continue
        answered.add(call_id)
        text = _response_body(response.get("response"))
        out.append(Message("tool", (ToolResult(call_id, text),), "string"))
    return out


def _response_text(result: Any) -> str:
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    parts = result if isinstance(result, list) else [result]
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, Mapping):
            texts.append(str(part))
            continue
        response = part.get("functionResponse")
        if isinstance(response, Mapping):
            texts.append(_response_body(response.get("response")))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _response_body(response: Any) -> str:
    if isinstance(response, Mapping):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return _dumps(response)


def _dumps(value: Any) -> str:
    return jsonio.dumps(value).decode()


def _parts(content: Any, role: str) -> list[Block]:
    """Text and other parts of a ``PartListUnion`` (calls and responses excepted)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [_text(content, role)]
    parts = content if isinstance(content, list) else [content]
    blocks: list[Block] = []
    for part in parts:
        if isinstance(part, str):
            blocks.append(_text(part, role))
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            if part.get("thought") is True:
                blocks.append(Thinking(part["text"], raw=part))
            else:
                blocks.append(_text(part["text"], role, part))
        elif isinstance(part, Mapping) and not (
            "functionCall" in part or "functionResponse" in part
        ):
            blocks.append(Other(next(iter(part), "unknown"), raw=part))
    return blocks


# What Gemini CLI itself puts in a user message (``getEnvironmentContext``, hook output): it
# hides such messages from the user's history, and so do these readers from the human's words.
_HARNESS_OPENINGS = ("<session_context>", "<hook_context>")


def _text(text: str, role: str, raw: Mapping[str, Any] | None = None) -> Text:
    if role == "model":
        origin = Origin.AGENT
    elif text.lstrip().startswith(_HARNESS_OPENINGS):
        origin = Origin.HARNESS
    else:
        origin = classify_user_text(text)
    return Text(text, origin, raw)


# --------------------------------------------------------------------------------- checkpoints


def read_checkpoint(path: str | Path, document: Any) -> Conversation:
    """A ``/chat save`` or ``/restore`` checkpoint as a read-only conversation."""
    p = Path(path)
    extra: dict[str, Any] = {"kind": "checkpoint"}
    if isinstance(document, Mapping):
        if isinstance(document.get("clientHistory"), list):
            contents = document["clientHistory"]
            extra["pending_tool_call"] = document.get("toolCall")
            extra["commit"] = document.get("commitHash")
        else:
            contents = document.get("history")
    else:
        contents = document
    if not isinstance(contents, list):
        raise InputError("a Gemini checkpoint holds a list of Content", path=p)
    messages: list[Message] = []
    open_calls: list[tuple[str, str]] = []  # (name, id) of calls not answered yet
    for position, content in enumerate(contents):
        if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list):
            raise InputError(
                "a Content needs a 'parts' list", path=p, position=f"content {position}"
            )
        role = "assistant" if content.get("role") == "model" else "user"
        messages.extend(_content(content["parts"], role, position, open_calls))
    return _conversation(p, messages, None, extra)


def _content(
    parts: list[Any], role: str, position: int, open_calls: list[tuple[str, str]]
) -> list[Message]:
    blocks: list[Block] = []
    results: list[Message] = []
    for number, part in enumerate(parts):
        if not isinstance(part, Mapping):
            continue
        call = part.get("functionCall")
        response = part.get("functionResponse")
        if isinstance(call, Mapping):
            name = str(call.get("name", ""))
            call_id = str(call.get("id") or f"call-{position}-{number}")
            open_calls.append((name, call_id))
            args = call.get("args")
            blocks.append(ToolCall(call_id, name, args, _dumps(args), raw=part))
        elif isinstance(response, Mapping):
            name = str(response.get("name", ""))
            call_id = _answer(open_calls, name, response.get("id"))
            text = _response_body(response.get("response"))
            is_error = isinstance(response.get("response"), Mapping) and "error" in response.get(
                "response", {}
            )
            results.append(
                Message("tool", (ToolResult(call_id, text, is_error, raw=part),), "string")
            )
        else:
            blocks.extend(_parts([part], "model" if role == "assistant" else "user"))
    meta = {"index": position}
    out = [Message(role, tuple(blocks), "blocks", meta=meta)] if blocks else []
    return out + results


def _answer(open_calls: list[tuple[str, str]], name: str, given: Any) -> str:
    for index, (call_name, call_id) in enumerate(open_calls):
        if (isinstance(given, str) and given == call_id) or (
            not isinstance(given, str) and call_name == name
        ):
            del open_calls[index]
            return call_id
    return str(given) if isinstance(given, str) else f"unmatched-{name}"


def _conversation(
    path: Path, messages: list[Message], model: str | None, extra: Mapping[str, Any]
) -> Conversation:
    return Conversation(
        messages=tuple(messages),
        settings={"model": model} if model else {},
        dialect="openai-chat",
        meta={"format": "gemini-cli", "path": str(path), "read_only": True, **extra},
    )


def read_gemini(path: str | Path, data: bytes, warnings: list[str] | None = None) -> Conversation:
    """A session (JSON or JSONL) or a checkpoint, by its shape."""
    p = Path(path)
    if _is_jsonl(data) and b"\n" in data.strip():
        return read_session(p, data, warnings)
    document = parse_json(data, p)
    if isinstance(document, Mapping) and looks_like_session(document):
        return read_session(p, data)
    if looks_like_checkpoint(document):
        return read_checkpoint(p, document)
    raise InputError("neither a Gemini CLI session nor a checkpoint", path=p)


__all__ = [
    "looks_like_checkpoint",
    "looks_like_session",
    "read_checkpoint",
    "read_gemini",
    "read_session",
    "read_session_records",
]
