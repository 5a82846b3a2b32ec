"""The billed calls of a Codex rollout: one per ``token_count`` event that counts a new call.

A rollout records each call's usage in an ``event_msg`` of type ``token_count``:
``last_token_usage`` (the call's: ``input_tokens`` with the cached ones among them,
``cached_input_tokens``, ``output_tokens`` with reasoning among them) and
``total_token_usage`` (the task's so far). Codex writes the event again when nothing new was
billed (the same total): a repeat, not a call. The model is the last ``turn_context``'s. A
rollout forked from an earlier task (``session_meta.forked_from_id``) starts with the
parent's records copied: calls answered before the fork began were billed to the parent
(`ipse.prefix`'s rollout reader says the same), and are not counted here. Only lines naming
one of those three record kinds are decoded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ipse.prefix._shared import billed_tokens
from ipse.usage._call import Call
from ipse.usage._lines import marked_lines, seconds

_MARKERS = (b'"token_count"', b'"turn_context"', b'"session_meta"')


class _Line(msgspec.Struct):
    timestamp: Any = None
    type: Any = None
    payload: Any = None


_LINE = msgspec.json.Decoder(_Line)


class CodexReader:
    """Reads one rollout's calls from an offset on; ``state`` carries what a later append
    needs (the session, the model, the last total, the fork's start)."""

    replayed = True  # the prefix replay reads it (`ipse.usage._losses`)

    def __init__(self, path: Path, calls: list[Call], state: dict[str, Any]) -> None:
        self.path = path
        self.calls = calls
        self.session = str(state.get("session") or _session_of(path))
        self.project = str(state.get("project") or "")
        self.model = str(state.get("model") or "")
        self.total: Any = state.get("total")
        self.fork: float | None = state.get("fork")
        self.inherited = int(state.get("inherited", 0))
        self.skipped = int(state.get("skipped", 0))

    def state(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "project": self.project,
            "model": self.model,
            "total": self.total,
            "fork": self.fork,
            "inherited": self.inherited,
            "skipped": self.skipped,
        }

    def read(self, start: int) -> int:
        end = [start]
        for line in marked_lines(self.path, start, _MARKERS, end):
            try:
                record = _LINE.decode(line)
            except msgspec.DecodeError:
                self.skipped += 1
                continue
            payload = record.payload
            if not isinstance(payload, dict):
                continue
            if record.type == "event_msg" and payload.get("type") == "token_count":
                self._count(payload.get("info"), record.timestamp)
            elif record.type == "turn_context":
                model = payload.get("model")
                self.model = model if isinstance(model, str) else self.model
            elif record.type == "session_meta":
                self._meta(payload, record.timestamp)
        return end[0]

    def _meta(self, payload: dict[str, Any], timestamp: Any) -> None:
        session, cwd = payload.get("id"), payload.get("cwd")
        if isinstance(session, str) and session:
            self.session = session
        if isinstance(cwd, str) and cwd and not self.project:
            self.project = cwd
        if isinstance(payload.get("forked_from_id"), str):
            self.fork = seconds(payload.get("timestamp", timestamp))

    def _count(self, info: Any, timestamp: Any) -> None:
        if not isinstance(info, dict):
            return
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total == self.total or not isinstance(last, dict):
            return  # a repeat of the previous count
        self.total = total
        time = seconds(timestamp)
        cached = last.get("cached_input_tokens")
        tokens = billed_tokens(
            {
                "input_tokens": last.get("input_tokens"),
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": last.get("output_tokens"),
            }
        )
        if tokens is None or time is None:
            self.skipped += 1
            return
        if self.fork is not None and time <= self.fork:
            self.inherited += 1
            return
        key = f"codex:{self.session}:{len(self.calls)}"
        self.calls.append(
            Call(
                key,
                time,
                self.model,
                "openai",
                "codex",
                self.project or self.session,
                self.session,
                "",
                *tokens,
            )
        )


def _session_of(path: Path) -> str:
    """A rollout's id from its name (``rollout-<time>-<id>.jsonl``) until its meta says."""
    stem = path.stem
    return stem[-36:] if len(stem) >= 36 else stem


__all__ = ["CodexReader"]
