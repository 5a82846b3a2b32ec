"""The proxy's outputs: the record file (one exchange per line) and the per-request log line.

The record is JSONL in the HTTP-log format ``ipse inspect``, ``ipse prefix`` and ``ipse report``
read (`ipse.transcript._formats.http_log.exchange_record` builds each line); it is created 0600
and each line is written whole and flushed, so a reader never sees half an exchange. Headers in
it have their credentials masked. The log line says what the cache did (read, written, uncached)
next to what the provider's cache model predicted, the cause when reuse was lost and what it
cost, and what a handoff removed and saved, at the handoff only: the later requests that carry
the same cut say so without a saving (`ipse._handoff_events`). A streamed response also gets a
line when it starts (`start_line`), and a request the proxy answers itself (a refusal, ``HEAD
/``) one of its own (`answer_line`): every request leaves a line, every error is in exactly one.

What is written has the request's credentials masked, by the masking step every front end
shares (`ipse._redact`): in headers, the query and body fields named like one (`record_entry`),
and wherever a value the request carried as a credential turns up again, such as an upstream's
error that quotes its URL (`exchange_secrets`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse._handoff_events import recorded_handoff
from ipse._redact import RequestSecrets, mask_text, masked_body, masked_headers, redact_query
from ipse.fileio import private_file
from ipse.proxy._autopilot import shown
from ipse.proxy._exchange import Exchange


class Recorder:
    """Appends exchanges to a JSONL file created 0600.

    Each line leaves in one ``write()`` on a descriptor opened ``O_APPEND``: the kernel puts it
    whole at the end of the file, so processes appending to the same record (the workers of one
    proxy, `ipse.proxy._workers`) never interleave their lines, whatever their size (on Linux
    local filesystems a write to a regular file holds the file's lock throughout; only a full
    disk makes a short write, whose rest then follows in another)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = private_file(path, append=True)
        self._fd = self._file.fileno()
        self._lock = threading.Lock()
        self.written = 0

    def write(self, entry: Mapping[str, Any], *, secrets: RequestSecrets | None = None) -> None:
        """Append ``entry``, with every one of ``secrets`` masked wherever it occurs."""
        line = jsonio.dumps(entry) + b"\n"
        if secrets is not None:
            line = secrets.bytes(line)
        with self._lock:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
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


def _ms(since: float, at: float | None) -> float | None:
    return None if at is None else round((at - since) * 1000, 1)


def log_line(
    ex: Exchange,
    usage: Mapping[str, Any] | None,
    analysis: Mapping[str, Any] | None,
    requests_in_conversation: int | None,
    *,
    json_log: bool,
) -> str:
    """One line about a finished exchange (JSON with ``json_log``)."""
    rewrite = ex.rewrite
    handoff = _handoff_shown(ex)
    skipped = rewrite.reason if rewrite is not None and rewrite.invalid else ex.handoff_error
    autopilot = shown(ex.autopilot)
    document: dict[str, Any] = {
        "event": "end",
        "method": ex.method,
        "path": ex.path,
        "status": ex.status,
        "model": ex.model,
        "conversation": ex.key,
        "ms_first_byte": _ms(ex.started, ex.first_byte),
        "ms_total": _ms(ex.started, ex.finished),
        "usage": dict(usage) if usage else None,
        "cache": analysis,
        "handoff": handoff,
        "handoff_skipped": skipped,
        "autopilot": autopilot,
        "autopilot_skipped": ex.autopilot_error,
        "error": ex.error,
        "client_disconnected": ex.disconnected,
        "requests_in_conversation": requests_in_conversation,
    }
    if json_log:
        return jsonio.dumps(document).decode()
    parts = [f"ipse proxy: {ex.method} {ex.path} {ex.status or '-'}"]
    if ex.model:
        parts.append(ex.model)
    parts.append(f"{document['ms_total']} ms")
    parts += _cache_words(analysis)
    if handoff is not None:
        parts.append(_handoff_words(handoff))
    if skipped:
        parts.append(f"handoff skipped: {skipped}")
    if autopilot is not None:
        parts.append(autopilot_words(autopilot))
    if ex.autopilot_error:
        parts.append(ex.autopilot_error)
    if ex.error:
        parts.append(f"error: {ex.error}")
    if ex.disconnected:
        parts.append("client disconnected")
    return " ".join(parts)


def _handoff_shown(ex: Exchange) -> dict[str, Any] | None:
    """What a log line says of the request's handoff (None: not rewritten): the saving at the
    handoff only (`ipse._handoff_events`)."""
    rewrite = ex.rewrite
    if rewrite is None or not rewrite.applied:
        return None
    return {
        "anchor": rewrite.anchor,
        "event": ex.handoff_event,
        "removed_calls": rewrite.removed_calls,
        "removed_thinking": rewrite.removed_thinking,
        "kept_thinking_removed": rewrite.kept_thinking_removed,
        "saved": saved(ex) if ex.handoff_event else None,
        "cached_prefix": rewrite.cached,
    }


def _handoff_words(handoff: Mapping[str, Any]) -> str:
    if not handoff["event"]:
        return f"cut at {handoff['anchor']} (the handoff of an earlier request)"
    where = "cached prefix" if handoff["cached_prefix"] else "new prefix"
    return (
        f"handoff at {handoff['anchor']}: removed {handoff['removed_calls']} calls, "
        f"{handoff['removed_thinking'] + handoff['kept_thinking_removed']} thinking, "
        f"saved {_saved(handoff['saved'])} ({where})"
    )


def autopilot_words(autopilot: Mapping[str, Any]) -> str:
    """The autopilot at a request, in words: a nudge or a cut made here (with the tokens before
    and after and the cache cost it paid), one carried from an earlier request, or why it left
    the request as sent."""
    if autopilot.get("invalid"):
        return f"autopilot skipped: {autopilot.get('reason')}"
    action = autopilot.get("action")
    if action == "cut":
        return (
            f"autopilot cut at {autopilot.get('anchor')}: {autopilot.get('tokens')} -> "
            f"{autopilot.get('tokens_after')} tokens, cache cost {autopilot.get('cache_cost')} "
            f"tokens, removed {autopilot.get('removed_calls')} calls"
        )
    if action == "nudge":
        return (
            f"autopilot nudge at {autopilot.get('tokens')} tokens "
            f"(soft {autopilot.get('soft')}, hard {autopilot.get('hard')})"
        )
    carried = [f"cut at {autopilot['anchor']}"] if autopilot.get("anchor") else []
    if autopilot.get("nudges"):
        carried.append(f"{autopilot['nudges']} nudge(s)")
    return f"autopilot: {' and '.join(carried) or 'nothing'} of an earlier request"


def _cache_words(analysis: Mapping[str, Any] | None) -> list[str]:
    if not analysis or "predicted" not in analysis:
        return []
    words = [
        f"cache {_tokens(analysis.get('actual'))}",
        f"(predicted {_tokens(analysis.get('predicted'))})",
    ]
    if analysis.get("cause"):
        lost = analysis.get("cost_lost_usd", 0)
        words.append(f"reuse lost: {analysis['cause']} ({analysis.get('lost_tokens')} "
                     f"tokens, ${lost})")  # fmt: skip
    return words


def saved(ex: Exchange) -> dict[str, int | None]:
    """What a handoff saved, as the log line and the record both show it (at the handoff
    only): the message tokens (`ipse.handoff.tokens_saved`) and the bytes the request lost."""
    return {"tokens": ex.saved_tokens, "bytes": ex.saved_bytes}


def start_line(ex: Exchange, at: float, *, json_log: bool) -> str:
    """The line for a response whose event stream begins (its headers came ``at``; its end gets
    `log_line`)."""
    first = _ms(ex.started, at)
    if json_log:
        document = {"event": "start", "method": ex.method, "path": ex.path,
                    "status": ex.status, "model": ex.model, "conversation": ex.key,
                    "ms_headers": first}  # fmt: skip
        return jsonio.dumps(document).decode()
    model = f" {ex.model}" if ex.model else ""
    head = f"ipse proxy: {ex.method} {ex.path} {ex.status}{model}"
    return f"{head} streaming (headers after {first} ms)"


def answer_line(method: str, path: str, status: int, note: str, *, json_log: bool) -> str:
    """The line for a request the proxy answered itself: a refusal, or a local answer."""
    if json_log:
        document = {"event": "answered", "method": method, "path": path, "status": status,
                    "note": note}  # fmt: skip
        return jsonio.dumps(document).decode()
    return f"ipse proxy: {method} {path} {status} {note}"


def record_entry(ex: Exchange, body: bytes, analysis: Any) -> dict[str, Any]:
    """The record's line for an exchange, its credentials masked (headers, query, fields)."""
    from ipse.transcript._shared import exchange_record

    rewrite = ex.rewrite
    client = ex.parsed if ex.parsed is not None else _json_or_text(ex.client_body)
    sent = client
    if ex.sent_body is not ex.client_body:
        sent = rewrite.body if rewrite is not None and rewrite.body else ex.sent_body
        sent = ex.autopilot_body or sent
        sent = _json_or_text(sent) if isinstance(sent, bytes) else sent
    handoff = None
    if rewrite is not None:
        handoff = recorded_handoff(
            rewrite.to_json(),
            event=ex.handoff_event,
            tokens=ex.saved_tokens,
            removed_bytes=ex.saved_bytes,
        )
    extra = {
        "provider": ex.provider,
        "conversation": ex.key,
        "handoff": handoff,
        "autopilot": shown(ex.autopilot),
        "error": ex.error,
        "client_disconnected": ex.disconnected,
        "analysis": analysis,
    }
    return exchange_record(
        method=ex.method,
        url=ex.path + (f"?{redact_query(ex.query)}" if ex.query else ""),
        headers=masked_headers(ex.headers),
        body=masked_body(sent),
        client_body=None if ex.sent_body is ex.client_body else masked_body(client),
        status=ex.status,
        response_headers=masked_headers(ex.response_headers),
        response_body=body if ex.status is not None and ex.status < 400 else _error_text(body),
        started=ex.started,
        first_byte=ex.first_byte,
        finished=ex.finished,
        extra=extra,
    )


def _json_or_text(data: bytes) -> Any:
    try:
        return jsonio.loads(data)
    except (jsonio.JSONDecodeError, ValueError):
        return data.decode("utf-8", errors="replace")


def _error_text(body: bytes) -> bytes:
    """An error's body for the record: a provider's (or a gateway's) error may quote a key this
    request never carried, so it is masked as every front end masks an error (`mask_text`)."""
    return mask_text(body.decode("utf-8", errors="replace")).encode("utf-8")


def exchange_secrets(ex: Exchange) -> RequestSecrets:
    """The credentials the request carried (headers, query, body fields), to mask wherever
    they turn up again in what is written about it (`ipse._redact.RequestSecrets`)."""
    body = ex.parsed if isinstance(ex.parsed, dict) else None
    return RequestSecrets.of_request(ex.headers, ex.query, body)


def _saved(saving: Mapping[str, Any]) -> str:
    tokens = saving.get("tokens")
    counted = "" if tokens is None else f"{tokens} tokens, "
    return f"{counted}{saving['bytes']} bytes"


__all__ = [
    "Recorder",
    "answer_line",
    "exchange_secrets",
    "log_line",
    "record_entry",
    "saved",
    "start_line",
]
