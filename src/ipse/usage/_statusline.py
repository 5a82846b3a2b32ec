"""Claude Code's status line: context used, this session's cost, cache hit rate, ipse's savings.

Claude Code runs a ``statusLine`` command after each message and pipes it a JSON document
(Claude Code 2.1.332: ``session_id``, ``transcript_path``, ``cwd``, ``model {id,
display_name}``, ``cost {total_cost_usd, ...}``, ``context_window {total_input_tokens,
total_output_tokens, context_window_size, current_usage, used_percentage,
remaining_percentage}``, ``version``, ...); the first line the command prints is shown under
the prompt. This answers from:

* the context: ``context_window.current_usage`` (the last call's input tokens, cache writes
  and reads) over ``context_window_size``; before the first call, or where Claude Code does
  not say, the last call of the transcript;
* the session's cost and cache hit rate: the transcript and its sub-agents' files, read by
  the same reader as ``ipse usage`` (`ClaudeReader`), each call once, priced the same way;
  what was read is kept in a small file per session in ipse's home folder, so each run
  reads only what Claude Code appended since the last;
* ipse's savings: the total the last ``ipse usage`` run found (`save_summary` keeps it in
  ipse's home folder).

It is run after every message, so it stays small: no command-line framework, no rich.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from ipse.errors import IpseError
from ipse.usage._call import Call
from ipse.usage._claude import ClaudeReader
from ipse.usage._cost import Costs

_CACHE_FOLDER = "statusline"


def statusline(stdin: bytes) -> str:
    """The status line for the JSON document Claude Code piped (``stdin``)."""
    try:  # (the standard library's parser: orjson's start costs more than this document)
        data = json.loads(stdin) if stdin.strip() else {}
    except (ValueError, RecursionError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    transcript = data.get("transcript_path")
    calls = _session_calls(Path(transcript)) if isinstance(transcript, str) and transcript else []
    parts = [_context(data, calls)]
    if calls:
        costs = Costs()
        unique = {c.key or str(i): c for i, c in enumerate(calls)}.values()
        cost = sum(costs.cost(c) for c in unique)
        sent = sum(c.context for c in unique)
        read = sum(c.read for c in unique)
        parts.append(f"${cost:,.2f} this session")
        parts.append(f"cache hit {read / sent:.0%}" if sent else "cache hit -")
    saved = _saved()
    if saved is not None:
        parts.append(f"ipse saved ${saved:,.2f}")
    return " | ".join(parts)


def _context(data: dict[str, Any], calls: list[Call]) -> str:
    window = data.get("context_window")
    window = window if isinstance(window, dict) else {}
    size = window.get("context_window_size")
    current = window.get("current_usage")
    used = None
    if isinstance(current, dict):
        used = sum(
            v
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            if type(v := current.get(k)) is int
        )
    elif calls:
        main = [c for c in calls if not c.agent]
        used = max(main, key=lambda c: c.time).context if main else None
    if used is None:
        return "context -"
    if type(size) is int and size > 0:
        return f"context {used / 1000:,.0f}k/{size / 1000:,.0f}k ({used / size:.0%})"
    return f"context {used / 1000:,.0f}k"


def _session_calls(transcript: Path) -> list[Call]:
    """The calls of the session's transcript and its sub-agents' files, read from where the
    last run stopped (the cache file beside ipse's other data)."""
    files = [transcript]
    subagents = transcript.with_suffix("") / "subagents"
    if subagents.is_dir():
        files += sorted(subagents.glob("*.jsonl"))
    cache_path = _cache_path(transcript)
    cache = _load(cache_path)
    known = cache.get("files") if cache.get("transcript") == str(transcript) else None
    known = known if isinstance(known, dict) else {}
    out: list[Call] = []
    fresh: dict[str, Any] = {}
    changed = False
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        entry = known.get(str(path))
        if not (isinstance(entry, dict) and entry.get("stamp") == stamp):
            entry = _read(path, stamp, entry if isinstance(entry, dict) else {})
            changed = True
        if entry is None:
            continue
        fresh[str(path)] = entry
        out.extend(Call(*row) for row in entry["calls"])
    if changed and cache_path is not None:
        _save(cache_path, {"transcript": str(transcript), "files": fresh})
    return out


def _read(path: Path, stamp: list[int], entry: dict[str, Any]) -> dict[str, Any] | None:
    """A file's entry read again: from where the last run stopped when the file only grew
    (the same inode, no smaller), else from the start (None: it cannot be read)."""
    start = 0
    calls: list[Call] = []
    state: dict[str, Any] = {}
    before = entry.get("stamp")
    read_to = int(entry.get("read_to") or 0)
    same = isinstance(before, list) and len(before) == 3 and before[2] == stamp[2]
    if same and stamp[0] >= read_to:  # the same file, grown: read what was appended
        start = read_to
        calls = [Call(*row) for row in entry.get("calls") or ()]
        state = entry.get("state") or {}
    reader = ClaudeReader(path, calls, state, fast=False)
    try:
        end = reader.read(start)
    except IpseError:
        return None
    return {"stamp": stamp, "read_to": end, "state": reader.state(),
            "calls": [c.row() for c in calls]}  # fmt: skip


def _cache_path(transcript: Path) -> Path | None:
    home = _home()
    if home is None:
        return None
    folder = home / _CACHE_FOLDER
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return folder / f"{zlib.crc32(str(transcript).encode()):08x}-{transcript.stem[:60]}.json"


def _load(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _save(path: Path, value: dict[str, Any]) -> None:
    """Written whole, by rename: a status line run at the same moment reads one or the other."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


SUMMARY = "usage-summary.json"


def save_summary(ledger: Any) -> None:
    """Keep what the ledger says ipse saved, in ipse's home (`SUMMARY`): the status line shows
    it without opening the store (a database driver's import costs more than its whole work)."""
    saved = {
        "saved_usd": sum(s.usd for s in ledger.savings),
        "saved_tokens": sum(s.tokens for s in ledger.savings),
        "handoffs": len({s.handoff for s in ledger.savings}),
    }
    folder = _home()
    if folder is not None:
        _save(folder / SUMMARY, saved)


def _home() -> Path | None:
    try:
        from ipse.home import home_dir

        return home_dir()
    except OSError:
        return None


def _saved() -> float | None:
    """What ipse's handoffs saved, as the last ``ipse usage`` run summed it."""
    folder = _home()
    summary = _load(folder / SUMMARY) if folder is not None else {}
    saved = summary.get("saved_usd")
    return float(saved) if isinstance(saved, int | float) else None


__all__ = ["SUMMARY", "save_summary", "statusline"]
