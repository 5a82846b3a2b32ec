"""Cline and Roo Code task histories (``api_conversation_history.json``), read as Anthropic.

Both extensions keep one folder per task under their VS Code global storage
(``tasks/<task id>/``) holding ``api_conversation_history.json``: a bare JSON array of Anthropic
``MessageParam`` objects (``role`` user or assistant, ``content`` a string or a list of blocks:
``text``, ``image``, ``document``, ``tool_use``, ``tool_result``, ``thinking``,
``redacted_thinking``). Older Cline wrote tool calls as XML inside assistant text and tool
results as user text (``[read_file for 'x'] Result:``); newer ones use native ``tool_use``
blocks. Either way the words are kept as text, the blocks as blocks. Harness text
(``<environment_details>``, ``<task>`` is the human's) is classified by its markers.

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

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._model import Conversation
from ipse.transcript.formats import anthropic

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
    body: dict[str, Any] = {"messages": messages}
    if model is not None:
        body = {"model": model, **body}
    conversation = anthropic.read_body(body, source=str(p))
    read = tuple(
        _with_meta(message, meta)
        for message, meta in zip(conversation.messages, metas, strict=True)
    )
    return Conversation(
        messages=read,
        settings=conversation.settings,
        dialect="anthropic",
        meta={"format": "cline", "path": str(p)},
    )


def effective_history(items: Sequence[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    """The messages Roo Code sends, with their positions in the file (Cline: all of them)."""
    indexed = list(enumerate(items))
    last_summary = max((i for i, m in indexed if m.get("isSummary") is True), default=None)
    if last_summary is not None:
        indexed = indexed[last_summary:]
        calls = {
            block.get("id")
            for _, m in indexed
            if m.get("role") == "assistant"
            for block in _blocks(m)
            if block.get("type") == "tool_use"
        }
        kept: list[tuple[int, Mapping[str, Any]]] = []
        for i, m in indexed:
            content = m.get("content")
            if m.get("role") == "user" and isinstance(content, list):
                left = [
                    b
                    for b in content
                    if not (
                        isinstance(b, Mapping)
                        and b.get("type") == "tool_result"
                        and b.get("tool_use_id") not in calls
                    )
                ]
                if not left:
                    continue
                if len(left) != len(content):
                    m = {**m, "content": left}
            kept.append((i, m))
        indexed = kept
        summaries: set[Any] = set()
    else:
        summaries = {m.get("condenseId") for _, m in indexed if m.get("isSummary")}
    markers = {m.get("truncationId") for _, m in indexed if m.get("isTruncationMarker")}
    summaries.discard(None)
    markers.discard(None)
    return [
        (i, m)
        for i, m in indexed
        if m.get("condenseParent") not in summaries and m.get("truncationParent") not in markers
    ]


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


def _with_meta(message: Any, meta: Mapping[str, Any]) -> Any:
    from dataclasses import replace

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
