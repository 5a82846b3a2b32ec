"""Format detection by sniffing: which reader fits a file, and which provider a body is for.

Detection looks at structure, never at file names alone: a folder of exchanges, a HAR file, a
JSONL file whose first object is a Claude Code record, a Gemini CLI session line, an exchange, a
Codex rollout line or a request body; a JSON array of Anthropic messages (Cline, Roo Code),
OpenHands events or Gemini Content; a JSON object that is a harness's own record (Gemini CLI
session or checkpoint, SWE-agent or mini-swe-agent trajectory, OpenHands trajectory export),
or a single JSON request body (Anthropic or OpenAI chat, told apart by their distinctive
fields). This module finds out what the input is (a folder, JSONL records, a JSON array or
object) and asks the format table (`ipse.transcript._table`) whose test, in rank order, claims
it; the tests the table names from here are the ones no single reader module owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._names import Names
from ipse.errors import InputError, UnknownFormat
from ipse.fileio import read_lines
from ipse.transcript._jsonl import check_text_head, parse_json, read_text_bytes
from ipse.transcript._model import Dialect
from ipse.transcript._table import Where, first_match

_ANTHROPIC_BLOCKS = Names(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "document",
        "web_search_tool_result",
        "search_result",
        "container_upload",
    }
)
_OPENAI_PARTS = Names({"image_url", "input_audio", "file", "refusal"})
_CODEX_TYPES = Names({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})


def body_dialect(body: Mapping[str, Any]) -> Dialect:
    """Anthropic or OpenAI chat, by the fields only one of them uses.

    A ``role: "system"`` message inside ``messages`` is a weak sign: Claude Code's Anthropic
    requests carry such messages too, so it counts for OpenAI only when nothing else in the
    body is Anthropic-shaped."""
    score = 0
    system_messages = 0
    if "system" in body:
        score += 2
    if any(
        k in body
        for k in (
            "max_completion_tokens",
            "response_format",
            "n",
            "logprobs",
            "reasoning_effort",
            "frequency_penalty",
            "presence_penalty",
        )
    ):
        score -= 2
    if any(k in body for k in ("thinking", "stop_sequences", "top_k", "output_config")):
        score += 2
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "system":
            system_messages += 1
        score += _message_score(message)
    if system_messages and score <= 0:
        score -= 3
    if score == 0:
        model = str(body.get("model", "")).lower()
        return "anthropic" if "claude" in model else "openai-chat"
    return "anthropic" if score > 0 else "openai-chat"


def _message_score(message: Mapping[str, Any]) -> int:
    """What one message says (`body_dialect`'s score): OpenAI's roles, call fields and content
    parts count against Anthropic, Anthropic's blocks and cache marks for it."""
    score = 0
    if message.get("role") in ("developer", "tool", "function"):
        score -= 3
    if "tool_calls" in message or "tool_call_id" in message or "reasoning_content" in message:
        score -= 3
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping):
                if block.get("type") in _ANTHROPIC_BLOCKS or "cache_control" in block:
                    score += 3
                elif block.get("type") in _OPENAI_PARTS:
                    score -= 3
    return score


# How many JSONL records detection reads before giving up on finding a decisive one.
_DETECT_RECORDS = 200


def detect(path: str | Path) -> str:
    """The format name of a file or folder: the first format of the table whose test of what
    the input is (a folder, a JSONL record, a JSON array or object) claims it.

    A JSONL file is judged by its first decisive records: metadata records a harness writes
    ahead of the conversation (a session summary, a title, a legacy rollout's header) do not
    decide, the first record that only one format writes does."""
    p = Path(path)
    if p.is_dir():
        name = first_match(Where.FOLDER, p)
        if name is not None:
            return name
        raise UnknownFormat("a folder that holds no .json exchanges", path=p)
    head = _jsonl_head(p)
    if head is not None:
        return _records_format(head, p)
    data = read_text_bytes(p)
    multi_line = b"\n" in data.strip()
    if multi_line and _first_line_is_object(data):
        return _jsonl_format(data, p)
    if data.lstrip()[:1] not in (b"{", b"["):
        raise UnknownFormat("neither JSON nor JSONL", path=p, position="line 1")
    try:
        document = parse_json(data, p)
    except InputError:
        if multi_line and _jsonl_objects(data, 5):  # JSONL whose first line is bad
            return _jsonl_format(data, p)
        raise
    if isinstance(document, list):
        return _array_format(document, p)
    if not isinstance(document, Mapping):
        raise UnknownFormat("a JSON document that is neither an object nor an array", path=p)
    return _document_format(document, p)


def _jsonl_head(p: Path) -> list[Mapping[str, Any]] | None:
    """The records detection judges a JSONL file by, read from its first lines only (a large
    session is not read whole just to be named): the JSON objects among the first
    ``_DETECT_RECORDS`` non-blank lines, when the first non-blank line is an object and
    another non-blank line follows. None: decide on the whole file, as before."""
    check_text_head(p)
    lines: list[bytes] = []
    for number, line in enumerate(read_lines(p)):
        if number >= 2 * _DETECT_RECORDS or (number >= 50 and not lines):
            return None  # the whole-file reading would judge the rest as one line
        if line.strip():
            lines.append(line)
            if len(lines) >= _DETECT_RECORDS:
                break
    if len(lines) < 2:
        return None
    try:
        if not isinstance(jsonio.loads(lines[0]), Mapping):
            return None
    except jsonio.JSONDecodeError:
        return None
    out = []
    for line in lines:
        try:
            value = jsonio.loads(line)
        except jsonio.JSONDecodeError:
            continue
        if isinstance(value, Mapping):
            out.append(value)
    return out


def _array_format(items: list[Any], path: Path) -> str:
    name = first_match(Where.ARRAY, items)
    if name is not None:
        return name
    raise UnknownFormat(
        "a JSON array of neither Anthropic messages (Cline, Roo Code), OpenHands events nor "
        "Gemini Content; name the format with --format",
        path=path,
    )


def _first_line_is_object(data: bytes) -> bool:
    first = next((ln for ln in data.split(b"\n", 50) if ln.strip()), b"")
    try:
        return isinstance(jsonio.loads(first), Mapping)
    except jsonio.JSONDecodeError:
        return False


def _jsonl_objects(data: bytes, limit: int) -> list[Mapping[str, Any]]:
    """The JSON objects among the first ``limit`` non-blank lines (bad lines skipped)."""
    out = []
    for line in [ln for ln in data.split(b"\n", limit * 2) if ln.strip()][:limit]:
        try:
            value = jsonio.loads(line)
        except jsonio.JSONDecodeError:
            continue
        if isinstance(value, Mapping):
            out.append(value)
    return out


def _jsonl_format(data: bytes, path: Path) -> str:
    return _records_format(_jsonl_objects(data, _DETECT_RECORDS), path)


def _records_format(records: list[Mapping[str, Any]], path: Path) -> str:
    for record in records:
        name = record_format(record)
        if name is not None:
            return name
    name = first_match(Where.HEADER, records[0]) if records else None
    if name is not None:
        return name  # e.g. a legacy rollout holding only its header
    raise UnknownFormat("JSONL whose records are of no known format", path=path, position="line 1")


def record_format(record: Mapping[str, Any]) -> str | None:
    """The format one JSONL record decides, or None when it does not decide alone."""
    return first_match(Where.RECORD, record)


def _document_format(document: Mapping[str, Any], path: Path) -> str:
    name = first_match(Where.DOCUMENT, document)
    if name is not None:
        return name
    raise UnknownFormat(
        "cannot tell the format (no 'messages', no exchange, no session records); "
        "name it with --format",
        path=path,
    )


# ------------------------------------------------------------ the table's tests (`_table`)


def holds_json_files(folder: Path) -> bool:
    """A folder of exchanges, one JSON file each."""
    return any(folder.glob("*.json"))


def is_gemini_record(record: Mapping[str, Any]) -> bool:
    """A Gemini CLI session line: a message or metadata record, or a rewind or update mark."""
    from ipse.transcript._formats.gemini_cli import looks_like_session

    return looks_like_session(record) or "$rewindTo" in record or "$set" in record


def is_rollout_record(record: Mapping[str, Any]) -> bool:
    """A Codex rollout line: a typed record with its payload."""
    return record.get("type") in _CODEX_TYPES and "payload" in record


def is_exchange_record(record: Mapping[str, Any]) -> bool:
    """A logged exchange, or a logged request body."""
    return "request" in record or isinstance(record.get("messages"), list)


def is_response_item(record: Mapping[str, Any]) -> bool:
    """A legacy Codex rollout line: a bare Responses item."""
    return record.get("type") in ("message", "function_call", "function_call_output", "reasoning")


def is_legacy_rollout_header(record: Mapping[str, Any]) -> bool:
    """The header line of a legacy Codex rollout: ``{id, timestamp, instructions}``, no type."""
    return "type" not in record and (
        "record_type" in record or ("instructions" in record and "timestamp" in record)
    )


def is_har(document: Mapping[str, Any]) -> bool:
    return isinstance(document.get("log"), Mapping) and "entries" in document["log"]


def is_exchange(document: Mapping[str, Any]) -> bool:
    return "request" in document and "response" in document


def is_gemini_document(document: Mapping[str, Any]) -> bool:
    """A Gemini CLI session (the older one-document kind) or a checkpoint."""
    from ipse.transcript._formats import gemini_cli

    return gemini_cli.looks_like_session(document) or gemini_cli.looks_like_checkpoint(document)


def holds_openhands_events(document: Mapping[str, Any]) -> bool:
    """An OpenHands export: ``{"trajectory": [...]}`` or ``{"events": [...]}``."""
    from ipse.transcript._formats import openhands

    events = openhands.events_of(document)
    return events is not None and openhands.looks_like_openhands(events)


def is_anthropic_body(document: Mapping[str, Any]) -> bool:
    return has_messages(document) and body_dialect(document) == "anthropic"


def has_messages(document: Mapping[str, Any]) -> bool:
    """A chat body (not told to be Anthropic by `is_anthropic_body`, which runs first)."""
    return isinstance(document.get("messages"), list)


def has_input(document: Mapping[str, Any]) -> bool:
    """A Responses body."""
    return isinstance(document.get("input"), list | str)


def is_rollout_typed(document: Mapping[str, Any]) -> bool:
    """One Codex rollout record as a whole document."""
    return document.get("type") in _CODEX_TYPES
