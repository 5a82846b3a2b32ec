"""The billed calls of a Claude Code session file, its sub-agents' files, and the calls of
sub-agents its ``progress`` records carry.

Only lines holding ``"usage"`` are decoded, each into a narrow struct (msgspec skips the
content it does not name): ``assistant`` records (``message.id``, ``message.model``,
``message.usage``, ``requestId``, ``timestamp``, ``sessionId``, ``isSidechain``) and
``progress`` records, whose ``data.message`` is a sub-agent's assistant record (Claude Code
2.1 writes the sub-agent's calls there as they stream, and again in
``<session>/subagents/agent-*.jsonl``). A call's records (one per content block, each with the
output counted so far) and its copies in other files share the response id and request id:
`ipse.prefix.same_call` says which records are one call, and the tally keeps one of them
(`ipse.usage._call.counted`). Synthetic records (model ``<synthetic>``: Claude Code's own
error messages, never sent) are not calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ipse.prefix import billed_tokens, same_call
from ipse.usage._call import Call, counted
from ipse.usage._lines import marked_lines, seconds

_MARKERS = (b'"usage"',)


class _Message(msgspec.Struct):
    id: Any = None
    model: Any = None
    usage: Any = None


class _Inner(msgspec.Struct):
    message: _Message | None = None
    requestId: Any = None
    timestamp: Any = None


class _Progress(msgspec.Struct):
    message: _Inner | None = None
    agentId: Any = None


class _Record(msgspec.Struct):
    type: Any = None
    message: Any = None  # raw: a user record's may be any JSON
    requestId: Any = None
    timestamp: Any = None
    sessionId: Any = None
    isSidechain: Any = None
    data: msgspec.Raw = msgspec.Raw(b"null")


_RECORD = msgspec.json.Decoder(_Record)
_PROGRESS = msgspec.json.Decoder(_Progress)


def where(path: Path) -> tuple[str, str, str]:
    """The project, session and agent a file's calls belong to, by where the file is:
    ``projects/<project>/<session>.jsonl``, or ``.../<session>/subagents/<agent>.jsonl``."""
    parent = path.parent
    if parent.name == "subagents":
        session_folder = parent.parent
        return session_folder.parent.name, session_folder.name, path.stem
    return parent.name, path.stem, ""


class ClaudeReader:
    """Reads one Claude Code file's calls from an offset on (see the module's docstring).

    ``calls`` holds the file's calls read so far (from the index on an append) and grows;
    ``last`` holds, per agent, the record its next record may continue (`same_call`)."""

    def __init__(self, path: Path, calls: list[Call], state: dict[str, Any]) -> None:
        self.path = path
        self.calls = calls
        self.project, self.file_session, self.file_agent = where(path)
        self.keyed = {c.key: i for i, c in enumerate(calls) if c.key}
        self.last: dict[str, Any] = dict(state.get("last") or {})
        self.skipped = int(state.get("skipped", 0))

    def state(self) -> dict[str, Any]:
        return {"last": self.last, "skipped": self.skipped}

    def read(self, start: int) -> int:
        """Read from byte ``start``; the offset after the last complete line."""
        end = [start]
        for line in marked_lines(self.path, start, _MARKERS, end):
            try:
                record = _RECORD.decode(line)
            except msgspec.DecodeError:
                self.skipped += 1
                continue
            kind = record.type
            if kind == "assistant":
                self._assistant(record)
            elif kind == "progress":
                self._progress(record)
        return end[0]

    def _assistant(self, record: _Record) -> None:
        message = record.message
        if not isinstance(message, dict):
            return
        agent = self.file_agent or ("sidechain" if record.isSidechain is True else "")
        self._add(
            message.get("id"),
            record.requestId,
            message.get("model"),
            message.get("usage"),
            record.timestamp,
            record.sessionId,
            agent,
        )

    def _progress(self, record: _Record) -> None:
        try:
            data = _PROGRESS.decode(record.data)
        except msgspec.DecodeError:
            return
        inner = data.message
        if inner is None or inner.message is None:
            return
        message = inner.message
        agent = f"agent-{data.agentId}" if isinstance(data.agentId, str) else "agent"
        self._add(
            message.id,
            inner.requestId,
            message.model,
            message.usage,
            inner.timestamp if inner.timestamp is not None else record.timestamp,
            record.sessionId,
            agent,
        )

    def _add(
        self,
        message_id: Any,
        request_id: Any,
        model: Any,
        usage: Any,
        timestamp: Any,
        session: Any,
        agent: str,
    ) -> None:
        if not isinstance(usage, dict) or model == "<synthetic>":
            return
        tokens = billed_tokens(usage)
        time = seconds(timestamp)
        if tokens is None or time is None:
            self.skipped += 1
            return
        meta: dict[str, Any] = {"usage": usage}
        if isinstance(message_id, str):
            meta["message_id"] = message_id
        if isinstance(request_id, str):
            meta["request_id"] = request_id
        key = _key(message_id, request_id)
        call = Call(
            key,
            time,
            model if isinstance(model, str) else "",
            "anthropic",
            "claude-code",
            self.project,
            session if isinstance(session, str) and session else self.file_session,
            agent,
            *tokens,
        )
        self._merge(call, agent, meta)

    def _merge(self, call: Call, agent: str, meta: dict[str, Any]) -> None:
        before = self.last.get(agent)
        self.last[agent] = meta
        if call.key:
            at = self.keyed.get(call.key)
            if at is not None:
                self.calls[at] = counted(self.calls[at], call)
                return
            self.keyed[call.key] = len(self.calls)
        elif before is not None and self.calls and same_call(before, meta):
            for at in range(len(self.calls) - 1, -1, -1):  # the agent's last call
                if self.calls[at].agent == agent:
                    self.calls[at] = counted(self.calls[at], call)
                    return
        self.calls.append(call)


def _key(message_id: Any, request_id: Any) -> str:
    """The call's identity across files: its response id and request id (either alone where
    the record has only one)."""
    if isinstance(message_id, str) and message_id:
        return f"{message_id}:{request_id}" if isinstance(request_id, str) else message_id
    if isinstance(request_id, str) and request_id:
        return f"req:{request_id}"
    return ""


__all__ = ["ClaudeReader", "where"]
