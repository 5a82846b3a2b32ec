"""Histories laid out as the agent CLIs lay them out, for the usage tests: the shared sessions
copied under a ``CLAUDE_CONFIG_DIR`` and a ``CODEX_HOME``, and small sessions written here
record by record (a stream without ids, a Gemini CLI session, a proxy record)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ipse.usage._collect import Folder


def shared_history(shared: Path, root: Path) -> tuple[Path, Path]:
    """Every shared Claude Code session (sub-agents too) and Codex rollout, laid out under
    ``root``: (the Claude Code config folder, the Codex home)."""
    claude, codex = root / "claude", root / "codex"
    project = claude / "projects" / "-home-user-project"
    project.mkdir(parents=True)
    for source in (shared / "claude-code").iterdir():
        if source.is_dir():
            shutil.copytree(source, project / source.name)
        else:
            shutil.copy(source, project / source.name)
    day = codex / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    for source in (shared / "codex").glob("*.jsonl"):
        shutil.copy(source, day / source.name.replace("localpush_redacted__", ""))
    return claude, codex


def folders(claude: Path | None = None, codex: Path | None = None,
            gemini: Path | None = None) -> list[Folder]:  # fmt: skip
    """The folders ``ipse usage`` reads for these agent CLIs' homes (as the agent table says)."""
    out = []
    if claude is not None:
        out.append(Folder(claude / "projects", ("**/*.jsonl",), "claude-code"))
    if codex is not None:
        out.append(Folder(codex / "sessions", ("**/rollout-*.jsonl",), "codex"))
    if gemini is not None:
        out.append(Folder(gemini / "tmp", ("*/chats/session-*.jsonl",), "gemini-cli"))
    return out


def assistant(
    time: str,
    usage: dict[str, Any],
    *,
    message_id: str | None = None,
    request_id: str | None = None,
    model: str = "claude-opus-4-6",
    session: str = "s1",
) -> dict[str, Any]:
    """A Claude Code assistant record."""
    message: dict[str, Any] = {"role": "assistant", "model": model, "usage": usage,
                               "content": [{"type": "text", "text": "ok"}]}  # fmt: skip
    if message_id is not None:
        message["id"] = message_id
    record: dict[str, Any] = {"type": "assistant", "timestamp": time, "sessionId": session,
                              "message": message}  # fmt: skip
    if request_id is not None:
        record["requestId"] = request_id
    return record


def usage(read: int, write: int = 0, uncached: int = 3, output: int = 10) -> dict[str, Any]:
    return {"input_tokens": uncached, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": output}  # fmt: skip


def write_jsonl(path: Path, records: list[dict[str, Any]], *, append: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return path
