"""The billed calls of a Claude Code session file, its sub-agents' files, and the calls of
sub-agents its ``progress`` records carry.

Only lines holding ``"usage"`` are decoded, each into a narrow struct (msgspec skips the
content it does not name, `ipse.usage._claude_struct`; the status line, which cannot afford
msgspec's import, parses them with the standard library into the same values):
``assistant`` records (``message.id``, ``message.model``, ``message.usage``, ``requestId``,
``timestamp``, ``sessionId``, ``isSidechain``) and ``progress`` records, whose
``data.message`` is a sub-agent's assistant record (Claude Code 2.1 writes the sub-agent's
calls there as they stream, and again in ``<session>/subagents/agent-*.jsonl``). A call's
records (one per content block, each with the output counted so far) and its copies in other
files share the response id and request id: `ipse.prefix.same_call` says which records are one
call, and the tally keeps one of them (`ipse.usage._call.counted`). Synthetic records (model
``<synthetic>``: Claude Code's own error messages, never sent) are not calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipse.prefix._shared import billed_tokens, same_call
from ipse.usage._call import Call, counted
from ipse.usage._lines import marked_lines, seconds

_MARKERS = (b'"usage"',)

# One record's call, as read: response id, request id, model, usage, time, session, whether
# it is an inline sidechain's, and the sub-agent a progress record names (None: not one).
Values = tuple[Any, Any, Any, Any, Any, Any, bool, str | None]


def dict_values(record: Any) -> Values | None:
    """The values of one record parsed whole (None for a record that is no call)."""
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if kind == "assistant":
        message = record.get("message")
        if not isinstance(message, dict):
            return None
        return (message.get("id"), record.get("requestId"), message.get("model"),
                message.get("usage"), record.get("timestamp"), record.get("sessionId"),
                record.get("isSidechain") is True, None)  # fmt: skip
    data = record.get("data")
    inner = data.get("message") if kind == "progress" and isinstance(data, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    if not isinstance(message, dict):
        return None
    assert isinstance(inner, dict) and isinstance(data, dict)
    time = inner.get("timestamp", record.get("timestamp"))
    agent = data.get("agentId")
    return (message.get("id"), inner.get("requestId"), message.get("model"),
            message.get("usage"), time, record.get("sessionId"), False,
            agent if isinstance(agent, str) else "")  # fmt: skip


def _json_values(line: bytes) -> Values | None:
    return dict_values(json.loads(line))


def _decoder(fast: bool) -> Callable[[bytes], Values | None]:
    if not fast:
        return _json_values
    from ipse.usage._claude_struct import struct_values

    return struct_values


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

    has_subagents = True  # <session>/subagents/*.jsonl
    replayed = True  # the prefix replay reads it (`ipse.usage._losses`)

    def __init__(
        self, path: Path, calls: list[Call], state: dict[str, Any], *, fast: bool = True
    ) -> None:
        self.path = path
        self.calls = calls
        self.fast = fast  # msgspec's narrow structs (`ipse.usage._claude_struct`), else json
        self.project, self.file_session, self.file_agent = where(path)
        self.keyed = {c.key: i for i, c in enumerate(calls) if c.key}
        self.last: dict[str, Any] = dict(state.get("last") or {})
        self.skipped = int(state.get("skipped", 0))

    def state(self) -> dict[str, Any]:
        return {"last": self.last, "skipped": self.skipped}

    def read(self, start: int) -> int:
        """Read from byte ``start``; the offset after the last complete line."""
        end = [start]
        values_of = _decoder(self.fast)
        for line in marked_lines(self.path, start, _MARKERS, end):
            try:
                found = values_of(line)
            except (ValueError, RecursionError):
                self.skipped += 1
                continue
            if found is None:
                continue
            message_id, request_id, model, usage, time, session, sidechain, named = found
            if named is not None:
                agent = f"agent-{named}" if named else "agent"
            else:
                agent = self.file_agent or ("sidechain" if sidechain else "")
            self._add(message_id, request_id, model, usage, time, session, agent)
        return end[0]

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


__all__ = ["ClaudeReader", "Values", "dict_values", "where"]
