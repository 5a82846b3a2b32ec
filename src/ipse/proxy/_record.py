"""The proxy's outputs: the record file (one exchange per line) and the per-request log line.

The record is JSONL in the HTTP-log format ``ipse inspect``, ``ipse prefix`` and ``ipse report``
read (`ipse.transcript.formats.http_log.exchange_record` builds each line); it is created 0600
and each line is written whole and flushed, so a reader never sees half an exchange. Headers in
it have their credentials masked. The log line says what the cache did (read, written, uncached)
next to what the provider's cache model predicted, the cause when reuse was lost and what it
cost, and what a handoff removed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.fileio import private_file


class Recorder:
    """Appends exchanges to a JSONL file created 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = private_file(path, append=True)
        self._lock = threading.Lock()
        self.written = 0

    def write(self, entry: Mapping[str, Any]) -> None:
        line = jsonio.dumps(entry) + b"\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            self.written += 1

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _tokens(value: Mapping[str, Any] | None) -> str:
    if not value:
        return "-"
    return (
        f"read {value.get('cache_read', 0)} written {value.get('cache_write', 0)} "
        f"uncached {value.get('uncached', 0)}"
    )


def log_line(
    ex: Any,
    usage: Mapping[str, Any] | None,
    analysis: Mapping[str, Any] | None,
    state: Any,
    *,
    json_log: bool,
) -> str:
    """One line about a finished exchange (JSON with ``json_log``)."""
    rewrite = ex.rewrite
    model = ex.parsed.get("model") if isinstance(ex.parsed, Mapping) else None
    handoff: dict[str, Any] | None = None
    if rewrite is not None and rewrite.applied:
        handoff = {
            "anchor": rewrite.anchor,
            "removed_calls": rewrite.removed_calls,
            "removed_thinking": rewrite.removed_thinking,
            "kept_thinking_removed": rewrite.kept_thinking_removed,
            "bytes_saved": max(0, len(ex.client_body) - len(ex.sent_body)),
            "tokens_saved": getattr(ex, "tokens_saved", None),
            "cached_prefix": rewrite.cached,
        }
    document: dict[str, Any] = {
        "method": ex.method,
        "path": ex.path,
        "status": ex.status,
        "model": model,
        "conversation": ex.key,
        "ms_first_byte": None
        if ex.first_byte is None
        else round((ex.first_byte - ex.started) * 1000, 1),
        "ms_total": round((ex.finished - ex.started) * 1000, 1),
        "usage": dict(usage) if usage else None,
        "cache": analysis,
        "handoff": handoff,
        "handoff_skipped": rewrite.reason if rewrite is not None and rewrite.invalid else None,
        "error": ex.error,
        "client_disconnected": ex.disconnected,
        "requests_in_conversation": state.requests if state is not None else None,
    }
    if json_log:
        return jsonio.dumps(document).decode()
    parts = [f"ipse proxy: {ex.method} {ex.path} {ex.status}"]
    if model:
        parts.append(str(model))
    parts.append(f"{document['ms_total']} ms")
    if analysis and "predicted" in analysis:
        parts.append(f"cache {_tokens(analysis.get('actual'))}")
        parts.append(f"(predicted {_tokens(analysis.get('predicted'))})")
        if analysis.get("cause"):
            lost = analysis.get("cost_lost_usd", 0)
            parts.append(f"reuse lost: {analysis['cause']} ({analysis.get('lost_tokens')} "
                         f"tokens, ${lost})")  # fmt: skip
    if handoff:
        where = "cached prefix" if handoff["cached_prefix"] else "new prefix"
        parts.append(
            f"handoff at {handoff['anchor']}: removed {handoff['removed_calls']} calls, "
            f"{handoff['removed_thinking'] + handoff['kept_thinking_removed']} thinking, "
            f"saved {_saved(handoff)} ({where})"
        )
    if document["handoff_skipped"]:
        parts.append(f"handoff skipped: {document['handoff_skipped']}")
    if ex.error:
        parts.append(f"error: {ex.error}")
    if ex.disconnected:
        parts.append("client disconnected")
    return " ".join(parts)


def _saved(handoff: Mapping[str, Any]) -> str:
    tokens = handoff.get("tokens_saved")
    counted = "" if tokens is None else f"{tokens} tokens, "
    return f"{counted}{handoff['bytes_saved']} bytes"


__all__ = ["Recorder", "log_line"]
