"""The billed calls of a Gemini CLI session: one per model message that records its tokens.

Gemini CLI (0.39 on) writes ``session-*.jsonl``: a metadata line (``sessionId``,
``projectHash``), then message records; a ``gemini`` record carries ``tokens`` (``input``,
the prompt with the cached part among it, ``cached``, ``output``, ``thoughts``, billed as
output) and ``model``. A record with an id seen before replaces it (Gemini CLI rewrites a
message as its tool calls finish), so a message is one call whatever times it was written.
Older versions wrote one JSON document (``session-*.json``) with a ``messages`` array: read
whole, from the start, each time it changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ipse import jsonio
from ipse._os_errors import os_error
from ipse.errors import InputError
from ipse.prefix._shared import billed_tokens
from ipse.usage._call import Call
from ipse.usage._lines import marked_lines, seconds

_MARKERS = (b'"tokens"', b'"sessionId"')


class _Record(msgspec.Struct):
    id: Any = None
    type: Any = None
    timestamp: Any = None
    tokens: Any = None
    model: Any = None
    sessionId: Any = None
    projectHash: Any = None


_RECORD = msgspec.json.Decoder(_Record)


class GeminiReader:
    """Reads one Gemini CLI session's calls from an offset on."""

    def __init__(self, path: Path, calls: list[Call], state: dict[str, Any]) -> None:
        self.path = path
        self.calls = calls
        self.session = str(state.get("session") or path.stem)
        self.project = str(state.get("project") or _project_of(path))
        self.keyed = {c.key: i for i, c in enumerate(calls)}
        self.skipped = int(state.get("skipped", 0))

    def state(self) -> dict[str, Any]:
        return {"session": self.session, "project": self.project, "skipped": self.skipped}

    def read(self, start: int) -> int:
        if self.path.suffix == ".json":
            return self._whole()
        end = [start]
        for line in marked_lines(self.path, start, _MARKERS, end):
            try:
                record = _RECORD.decode(line)
            except msgspec.DecodeError:
                self.skipped += 1
                continue
            if isinstance(record.sessionId, str) and record.sessionId and record.id is None:
                self.session = record.sessionId
            self._message(record.id, record.type, record.timestamp, record.tokens, record.model)
        return end[0]

    def _whole(self) -> int:
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise os_error(exc, "read", self.path) from exc
        try:
            document = jsonio.loads(data)
        except jsonio.JSONDecodeError as exc:
            raise InputError("not a Gemini CLI session (not JSON)", path=self.path) from exc
        if not isinstance(document, dict):
            return len(data)
        session = document.get("sessionId")
        self.session = session if isinstance(session, str) and session else self.session
        self.calls.clear()
        self.keyed.clear()
        for message in document.get("messages") or ():
            if isinstance(message, dict):
                self._message(
                    message.get("id"),
                    message.get("type"),
                    message.get("timestamp"),
                    message.get("tokens"),
                    message.get("model"),
                )
        return len(data)

    def _message(self, ident: Any, kind: Any, timestamp: Any, tokens: Any, model: Any) -> None:
        if kind != "gemini" or not isinstance(tokens, dict):
            return
        output = _count(tokens.get("output")) + _count(tokens.get("thoughts"))
        billed = billed_tokens(
            {
                "input_tokens": tokens.get("input"),
                "input_tokens_details": {"cached_tokens": tokens.get("cached")},
                "output_tokens": output,
            }
        )
        time = seconds(timestamp)
        if billed is None or time is None:
            self.skipped += 1
            return
        key = f"gemini:{self.session}:{ident}" if isinstance(ident, str) else ""
        call = Call(
            key,
            time,
            model if isinstance(model, str) else "",
            "google",
            "gemini",
            self.project,
            self.session,
            "",
            *billed,
        )
        at = self.keyed.get(key) if key else None
        if at is not None:
            self.calls[at] = call  # a message written again replaces the one before
            return
        if key:
            self.keyed[key] = len(self.calls)
        self.calls.append(call)


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def _project_of(path: Path) -> str:
    """``tmp/<project>/chats/session-*.jsonl``: the project's folder name."""
    parent = path.parent
    return parent.parent.name if parent.name == "chats" else parent.name


__all__ = ["GeminiReader"]
