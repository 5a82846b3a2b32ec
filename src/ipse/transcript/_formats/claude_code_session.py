"""Writing a Claude Code session file that ``claude --resume <id>`` loads.

The records are the smallest set Claude Code 2.1 needs to rebuild a conversation, plus the
fields its pickers read: ``type`` (user or assistant), ``message`` (the API message; assistant
messages in the API's response shape with ``id``, ``model``, ``stop_reason`` and ``usage``),
``uuid`` and ``parentUuid`` chained from a null root, an ISO-8601 ``timestamp`` (resume picks
the leaf by time, so times only increase), ``sessionId``, ``cwd``, ``version``,
``isSidechain: false`` and ``userType: "external"``. Tested with Claude Code 2.1.332.

Where it goes: ``projects/<folder>/<session id>.jsonl`` under the config root
(``CLAUDE_CONFIG_DIR``, else ``~/.claude``); the folder is the working directory with every
character that is not an ASCII letter or digit replaced by ``-``, and a path longer than 200
characters is cut to 200 and given ``-`` plus a base-36 hash of the whole path (the 32-bit
string hash Claude Code's SDK uses). The file is created exclusively, mode 0600, so an
existing session is never touched.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import InputError

TESTED_VERSION = "2.1.332"
_MAX_FOLDER = 200
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def config_root() -> Path:
    """Claude Code's configuration folder: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def project_folder(cwd: str) -> str:
    """The folder name Claude Code gives a working directory's sessions."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(name) <= _MAX_FOLDER:
        return name
    return f"{name[:_MAX_FOLDER]}-{_base36(abs(_string_hash(cwd)))}"


def _string_hash(text: str) -> int:
    """A JavaScript string hash: ``h = h * 31 + code unit``, kept as a signed 32-bit integer."""
    units = text.encode("utf-16-le")
    value = 0
    for index in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[index : index + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(value: int) -> str:
    digits = ""
    while True:
        value, rest = divmod(value, 36)
        digits = _DIGITS[rest] + digits
        if value == 0:
            return digits


def session_records(
    messages: Sequence[Mapping[str, Any]],
    *,
    session_id: str,
    cwd: str,
    model: str,
    version: str = TESTED_VERSION,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """One record per message of an Anthropic request body, chained root to leaf."""
    start = now or datetime.now(UTC)
    records: list[dict[str, Any]] = []
    parent: str | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise InputError(f"message {index}: role {role!r} has no Claude Code record")
        record_id = str(uuid.uuid5(uuid.UUID(session_id), f"ipse-record-{index}"))
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session_id,
                "version": version,
                "type": role,
                "message": _message(message, model, record_id) if role == "assistant" else message,
                "uuid": record_id,
                "timestamp": _stamp(start + timedelta(milliseconds=index)),
            }
        )
        parent = record_id
    return records


def _message(message: Mapping[str, Any], model: str, record_id: str) -> dict[str, Any]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    last = blocks[-1] if blocks else {}
    return {
        "id": "msg_ipse_" + record_id.replace("-", "")[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if last.get("type") == "tool_use" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _stamp(moment: datetime) -> str:
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def write_session(
    body: Mapping[str, Any],
    *,
    cwd: str,
    root: Path | None = None,
    session_id: str | None = None,
    version: str = TESTED_VERSION,
) -> tuple[str, Path]:
    """Write ``body``'s messages as a new session of ``cwd``; its id and path.

    The file is created with ``O_EXCL``: an existing session is never overwritten."""
    new_id = session_id or str(uuid.uuid4())
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InputError("the handed-off body has no messages to write as a session")
    model = str(body.get("model") or "claude")
    records = session_records(messages, session_id=new_id, cwd=cwd, model=model, version=version)
    folder = (root or config_root()) / "projects" / project_folder(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{new_id}.jsonl"
    data = b"".join(jsonio.dumps(record) + b"\n" for record in records)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return new_id, path


__all__ = [
    "TESTED_VERSION",
    "config_root",
    "project_folder",
    "session_records",
    "write_session",
]
