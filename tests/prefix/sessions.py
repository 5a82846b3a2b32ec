"""Hand-built Claude Code sessions for the prefix tests: records shaped as the harness writes
them (a uuid chain through ``parentUuid``, one record per content block, usage on the assistant
records, ``version`` and ``sessionId`` on every record), small enough to read in a test."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .util import T0

OPUS = "claude-opus-4-6"


def usage(read: int, write: int, uncached: int = 3, *, hour: bool = False) -> dict[str, Any]:
    """An assistant record's usage; ``hour``: the writes were 1-hour writes."""
    return {
        "input_tokens": uncached,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": 0 if hour else write,
            "ephemeral_1h_input_tokens": write if hour else 0,
        },
        "output_tokens": 50,
    }


class Session:
    """Records appended one by one; each record's parent is the one before it unless told."""

    def __init__(self, session_id: str = "s-1", version: str = "2.1.38") -> None:
        self.records: list[dict[str, Any]] = []
        self.session_id = session_id
        self.version = version
        self.time = T0
        self._ids = 0

    def _uuid(self) -> str:
        self._ids += 1
        return f"{self.session_id}-u{self._ids:04d}"

    def _record(self, kind: str, after: float, parent: str | bool | None, **extra: Any) -> str:
        self.time += timedelta(seconds=after)
        uuid = self._uuid()
        if parent is False:
            parent = self.records[-1]["uuid"] if self.records else None
        record = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": self.session_id,
            "version": extra.pop("version", None) or self.version,
            "timestamp": _iso(self.time),
            "isSidechain": extra.pop("sidechain", False),
            "cwd": "/work/project",
        }
        record.update(extra)
        self.records.append(record)
        return uuid

    def user(self, text: str, *, after: float = 5, parent: str | bool | None = False) -> str:
        message = {"role": "user", "content": text}
        return self._record("user", after, parent, message=message)

    def result(self, call: str, text: str = "ok", *, after: float = 2) -> str:
        content = [{"type": "tool_result", "tool_use_id": call, "content": text}]
        return self._record("user", after, False, message={"role": "user", "content": content})

    def assistant(
        self,
        block: dict[str, Any],
        used: dict[str, Any],
        *,
        after: float = 3,
        message_id: str | None = None,
        parent: str | bool | None = False,
        model: str = OPUS,
        version: str | None = None,
        diagnostics: dict[str, Any] | None = None,
    ) -> str:
        message: dict[str, Any] = {
            "role": "assistant",
            "type": "message",
            "model": model,
            "content": [block],
            "usage": used,
        }
        if message_id is not None:
            message["id"] = message_id
        if diagnostics is not None:
            message["diagnostics"] = diagnostics
        extra: dict[str, Any] = {"message": message, "version": version}
        if message_id is not None:
            extra["requestId"] = "req_" + message_id
        return self._record("assistant", after, parent, **extra)

    def compact(self, summary: str = "summary of the work so far", *, after: float = 30) -> str:
        """A compaction boundary and the summary that opens the next part."""
        boundary = self._record(
            "system",
            after,
            None,
            subtype="compact_boundary",
            logicalParentUuid=self.records[-1]["uuid"],
            content="Conversation compacted",
        )
        message = {"role": "user", "content": summary}
        return self._record("user", 1, boundary, message=message, isCompactSummary=True)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool_use(call: str, command: str = "ls") -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
