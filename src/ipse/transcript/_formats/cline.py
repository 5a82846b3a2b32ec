"""Cline and Roo Code task histories (``api_conversation_history.json``), read as Anthropic.

Both extensions keep one folder per task under their VS Code global storage
(``tasks/<task id>/``) holding ``api_conversation_history.json``: a bare JSON array of Anthropic
``MessageParam`` objects (``role`` user or assistant, ``content`` a string or a list of blocks:
``text``, ``image``, ``document``, ``tool_use``, ``tool_result``, ``thinking``,
``redacted_thinking``). Older Cline wrote tool calls as XML inside assistant text and tool
results as user text (``[read_file for 'x'] Result:``); newer ones use native ``tool_use``
blocks. Everything the human typed is wrapped in a tag (``<task>``, ``<feedback>``, ``<answer>``,
``<user_message>``): user text with one is the human's, the rest of a user turn (tool output
as text, ``<environment_details>``, reminders, attached files) the extension's.

Cline 3.3x-3.x with native tool calls writes a result it could not tie to its call id as text
(``[name for 'x'] Result:`` and the output) and, when sending, puts ``"result missing"``
``tool_result`` blocks first for calls left without one. `pair_text_results` ties such a text
result to its call (the first unanswered call of that name) as a ``tool_result`` holding the
text unchanged, so the conversation has its tool results as results; results that carry the
human's words stay text and their call gets Cline's ``"result missing"``.

Fields the extensions add and the API does not accept are moved out of the message before the
Anthropic codec reads it, so a written body is one the API accepts:

* Cline 3.x-4.1 (checked: cline/cline at 21cb8d2, ``apps/vscode`` 4.1.13): per message ``id``,
  ``modelInfo`` (``modelId``, ``providerId``, ``mode``), ``metrics`` (``tokens``: ``prompt``,
  ``completion``, ``cached``; ``cost``), ``ts`` (epoch milliseconds); per block ``call_id``,
  ``reasoning_details``, ``signature`` (Gemini thought signatures on text and tool_use) and
  ``summary`` on thinking blocks. Thinking blocks without a signature are dropped, as Cline
  drops them before sending.
* Roo Code 3.52.1 (checked: RooCodeInc/Roo-Code at cb83656): per message ``ts``, ``isSummary``,
  ``id``, ``condenseId`` / ``condenseParent``, ``truncationId`` / ``truncationParent`` /
  ``isTruncationMarker``, ``reasoning_details``, ``reasoning_content``; standalone reasoning
  items (``type: "reasoning"``, no role) between messages. The conversation is what Roo sends:
  from the last ``isSummary`` message on, without messages hidden by a truncation marker or a
  summary that exists, and without tool results whose call was condensed away (Roo's
  ``getEffectiveApiHistory``). Reasoning items are not messages and are skipped.

``ui_messages.json`` beside the file (an array of ``{ts, type: "say"|"ask", say|ask, text,
conversationHistoryIndex}``) gives times where the messages have no ``ts``: message *k* gets
the time of the first UI message recorded with ``conversationHistoryIndex == k`` (the first
thing shown after it was appended), which is close to, not exactly, when it was written.

Times go to ``Message.meta["timestamp"]`` (ISO 8601), the model id to ``meta["model"]`` and the
conversation's ``model`` setting (the last one recorded). The system prompt and the tool
definitions are not recorded: a written body has neither.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.transcript._formats import anthropic
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._model import Conversation, Message, Origin, Text

UI_MESSAGES = "ui_messages.json"
_MESSAGE_KEYS = ("role", "content")
_BLOCK_EXTRAS = ("call_id", "reasoning_details")
_SIGNED_ELSEWHERE = ("text", "tool_use")  # Gemini thought signatures ride on these in Cline


def looks_like_cline(items: Sequence[Any]) -> bool:
    """Whether a JSON array is a list of Anthropic messages (with Roo's reasoning items)."""
    seen = False
    for item in items[:20]:
        if not isinstance(item, Mapping):
            return False
        if item.get("type") == "reasoning" and "role" not in item:
            continue
        if item.get("role") not in ("user", "assistant") or "content" not in item:
            return False
        seen = True
    return seen


def read_history(
    path: str | Path, *, warnings: list[str] | None = None, data: Any = None
) -> Conversation:
    """An ``api_conversation_history.json`` file as an Anthropic conversation."""
    p = Path(path)
    items = data if data is not None else parse_json(read_text_bytes(p), p)
    if not isinstance(items, list):
        raise InputError("a Cline history must be a JSON array of messages", path=p)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError("a message must be a JSON object", path=p, position=f"item {index}")
    live = effective_history(items)
    times = _ui_times(p, warnings)
    messages: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    model: str | None = None
    for index, item in live:
        if item.get("type") == "reasoning" and "role" not in item:
            continue
        messages.append(_clean_message(item))
        meta = _meta(item, index, times)
        metas.append(meta)
        if isinstance(meta.get("model"), str):
            model = meta["model"]
    paired = pair_text_results(messages)
    body: dict[str, Any] = {"messages": messages}
    if model is not None:
        body = {"model": model, **body}
    conversation = anthropic.read_body(body, source=str(p))
    read = tuple(
        _with_meta(_with_origins(message), meta)
        for message, meta in zip(conversation.messages, metas, strict=True)
    )
    return Conversation(
        messages=read,
        settings=conversation.settings,
        dialect="anthropic",
        meta={"format": "cline", "path": str(p), "text_results": paired},
    )


def effective_history(items: Sequence[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    """The messages Roo Code sends, with their positions in the file (Cline: all of them)."""
    indexed = list(enumerate(items))
    last_summary = max((i for i, m in indexed if m.get("isSummary") is True), default=None)
    summaries: set[Any] = set()
    if last_summary is not None:
        indexed = _since_summary(indexed[last_summary:])
    else:
        summaries = {_name(m.get("condenseId")) for _, m in indexed if m.get("isSummary")}
    markers = {_name(m.get("truncationId")) for _, m in indexed if m.get("isTruncationMarker")}
    summaries.discard(None)
    markers.discard(None)
    return [
        (i, m)
        for i, m in indexed
        if _name(m.get("condenseParent")) not in summaries
        and _name(m.get("truncationParent")) not in markers
    ]


def _since_summary(
    indexed: list[tuple[int, Mapping[str, Any]]],
) -> list[tuple[int, Mapping[str, Any]]]:
    """The messages from the last summary on, less the results of calls made before it (a user
    message left with nothing goes)."""
    calls = {
        _name(block.get("id"))
        for _, m in indexed
        if m.get("role") == "assistant"
        for block in _blocks(m)
        if block.get("type") == "tool_use"
    }
    kept: list[tuple[int, Mapping[str, Any]]] = []
    for i, m in indexed:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, list):
            left = [b for b in content if not _result_of_none(b, calls)]
            if not left:
                continue
            if len(left) != len(content):
                m = {**m, "content": left}
        kept.append((i, m))
    return kept


def _result_of_none(block: Any, calls: set[str | None]) -> bool:
    """Whether ``block`` is a tool result whose call is none of ``calls``."""
    if not isinstance(block, Mapping) or block.get("type") != "tool_result":
        return False
    return _name(block.get("tool_use_id")) not in calls


def _name(value: Any) -> str | None:
    """An id Roo Code links messages by, when it is a string (else it links nothing)."""
    return value if isinstance(value, str) else None


_RESULT_RE = re.compile(r"\[([A-Za-z0-9_.-]+)(?: for [^\n]*)?\] Result:")
_HUMAN_TAGS = re.compile(r"<(task|feedback|answer|user_message)>")
RESULT_MISSING = "result missing"  # what Cline sends for a call whose result it did not pair


def pair_text_results(messages: list[dict[str, Any]]) -> int:
    """Give every ``tool_use`` its ``tool_result`` in the next user message, in place.

    Cline with native tool calls writes a result it could not tie to a call id as a text block
    (``[read_file for 'x'] Result:`` and the output), and before sending puts a
    ``tool_result`` with ``"result missing"`` first in the next user message for every call
    left without one (``ensureToolResultsFollowToolUse``). Here a text result is tied to the
    first unanswered call of the same name and becomes its ``tool_result`` (its text
    unchanged), unless it carries the human's words (``<answer>``, ``<feedback>``,
    ``<user_message>``): those stay text, and their call gets Cline's ``"result missing"``.
    Results go first, in call order. Returns how many text results became ``tool_result``.
    """
    converted = 0
    for index in range(len(messages) - 1):
        message, following = messages[index], messages[index + 1]
        calls = [
            (str(b.get("id")), str(b.get("name")))
            for b in _blocks(message)
            if b.get("type") == "tool_use"
        ]
        if message.get("role") != "assistant" or not calls or following.get("role") != "user":
            continue
        paired = _pair_turn(calls, following)
        if paired is not None:
            messages[index + 1], count = paired
            converted += count
    return converted


def _pair_turn(
    calls: list[tuple[str, str]], following: dict[str, Any]
) -> tuple[dict[str, Any], int] | None:
    """The user message after a turn's ``calls`` with a ``tool_result`` first for each call,
    and how many were text results; None when it needs no change."""
    content = following.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    results: dict[str, Any] = {}
    rest: list[Any] = []
    converted = 0
    for block in blocks:
        if _is_result(block):
            results.setdefault(str(block.get("tool_use_id")), block)
            continue
        call = _text_result_call(block, calls, results)
        if call is None:
            rest.append(block)
        else:
            results[call] = {"type": "tool_result", "tool_use_id": call, "content": block["text"]}
            converted += 1
    missing = [c for c, _ in calls if c not in results]
    if not missing and len(results) == sum(1 for b in blocks if _is_result(b)):
        return None  # nothing paired, nothing missing: the message stays as written
    for call in missing:
        results[call] = {"type": "tool_result", "tool_use_id": call, "content": RESULT_MISSING}
    ids = {c for c, _ in calls}
    ordered = [results[c] for c, _ in calls]
    ordered += [r for key, r in results.items() if key not in ids]
    return {**following, "content": ordered + rest}, converted


def _is_result(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def _text_result_call(
    block: Any, calls: list[tuple[str, str]], results: Mapping[str, Any]
) -> str | None:
    """The first unanswered call a text block is the result of (``[name ...] Result:``), unless
    the block carries the human's words."""
    text = block.get("text") if isinstance(block, Mapping) else None
    if not isinstance(text, str):
        return None
    match = _RESULT_RE.match(text)
    if match is None or _HUMAN_TAGS.search(text):
        return None
    return next((c for c, name in calls if name == match.group(1) and c not in results), None)


def _with_origins(message: Message) -> Message:
    """Cline wraps every word the human typed in a tag (``<task>``, ``<feedback>``,
    ``<answer>``, ``<user_message>``); the rest of a user turn is the extension's."""
    if message.role != "user":
        return message
    blocks = tuple(
        replace(b, origin=Origin.HUMAN if _HUMAN_TAGS.search(b.text) else Origin.HARNESS)
        if isinstance(b, Text)
        else b
        for b in message.blocks
    )
    return replace(message, blocks=blocks)


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _clean_message(item: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: item[k] for k in _MESSAGE_KEYS if k in item}
    content = item.get("content")
    if isinstance(content, list):
        out["content"] = [_clean_block(b) for b in content if _sendable(b)]
    return out


def _sendable(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return True  # the codec names the bad block
    return not (block.get("type") == "thinking" and not block.get("signature"))


def _clean_block(block: Any) -> Any:
    if not isinstance(block, Mapping):
        return block
    kind = block.get("type")
    drop = set(_BLOCK_EXTRAS)
    if kind in _SIGNED_ELSEWHERE:
        drop.add("signature")
    if kind == "thinking":
        drop.add("summary")
    if not drop.intersection(block):
        return block
    return {k: v for k, v in block.items() if k not in drop}


def _meta(item: Mapping[str, Any], index: int, times: Mapping[int, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"index": index}
    ts = item.get("ts")
    stamp = _iso(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
    if stamp is not None:
        meta["timestamp"] = stamp
    elif index in times:
        meta["timestamp"] = times[index]
    info = item.get("modelInfo")
    if isinstance(info, Mapping) and isinstance(info.get("modelId"), str):
        meta["model"] = info["modelId"]
    for key in ("id", "metrics", "isSummary"):
        if key in item:
            meta[key] = item[key]
    return meta


def _with_meta(message: Message, meta: Mapping[str, Any]) -> Message:
    return replace(message, meta={**message.meta, **meta})


def _iso(ms: float) -> str | None:
    """Epoch milliseconds as ISO 8601; None for a value no calendar date has."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None


def _ui_times(path: Path, warnings: list[str] | None) -> dict[int, str]:
    """Message index -> the time of the first UI message recorded just after it."""
    ui = path.with_name(UI_MESSAGES)
    if not ui.is_file():
        return {}
    try:
        items = parse_json(read_text_bytes(ui), ui)
    except InputError as exc:
        if warnings is not None:
            warnings.append(f"{ui}: not read for times ({exc.detail})")
        return {}
    times: dict[int, str] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        index, ts = item.get("conversationHistoryIndex"), item.get("ts")
        if isinstance(index, int) and isinstance(ts, int | float) and index not in times:
            stamp = _iso(ts)
            if stamp is not None:
                times[index] = stamp
    return times


__all__ = ["UI_MESSAGES", "effective_history", "looks_like_cline", "read_history"]
