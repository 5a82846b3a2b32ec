"""The MCP server's tools: name, description for a model, JSON schema, and the library call.

Each tool is a `Tool` whose ``run`` takes the server's `Settings` and the checked arguments and
returns a JSON object (the structured result) with a ``text`` for the model. Nothing here does
the work: the checkpoint is `ipse.handoff.record_checkpoint`, recall and the listing
(`ipse.mcp._recall`) the archive's `recall_item`, `search_items` and `list_items` (the scope
rule every front end shares), the state tools are `ipse.statedir`, the twin tools
`ipse.twin.apply_turn` and `ipse.twin.rehydrate`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ipse import jsonio
from ipse.errors import InputError, UsageError
from ipse.mcp._listing import TWIN_PREFIX
from ipse.mcp._recall import RECALL_CHARS, caller
from ipse.mcp._schemas import object_schema as _object


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What the server was started with."""

    session: str = field(default_factory=lambda: default_session())
    state_dir: Path = Path("state")
    archive_url: str | None = None  # None: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME
    store_url: str | None = None  # the twin store
    twin: str | None = None
    twin_config: Path | None = None
    cwd: Path = field(default_factory=Path.cwd)


CLAUDE_CODE_PREFIX = "session:"


def default_session() -> str:
    """The session the checkpoints are stored under, keyed as the proxy and ``ipse handoff`` key
    it (`ipse._sessions.mcp_session`): ``IPSE_SESSION``, else the harness's session id
    (``CLAUDE_CODE_SESSION_ID``, Codex's thread id), else a fresh ``mcp-`` id."""
    from ipse._sessions import mcp_session

    return mcp_session(os.environ)


def for_call(settings: Settings, meta: Any) -> Settings:
    """The settings of one tool call: its session read at the call (`ipse.mcp._session`: the
    harness may have switched sessions since the server started)."""
    from ipse.mcp._session import call_session

    found = call_session(settings.session, meta)
    return settings if found == settings.session else replace(settings, session=found)


@dataclass(frozen=True, slots=True)
class Tool:
    """One MCP tool."""

    name: str
    description: str
    schema: Mapping[str, Any]
    run: Callable[[Settings, dict[str, Any]], dict[str, Any]]


# ------------------------------------------------------------------------------ checkpoint


def _micro_handoff(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.archive import open_archive
    from ipse.handoff._shared import record_checkpoint

    conversation = _session_conversation(settings)
    archive = open_archive(settings.archive_url)
    try:
        found = record_checkpoint(
            args, session=settings.session, archive=archive, conversation=conversation
        )
        # filed under this folder's project too: a later session here finds the checkpoint
        archive.add_project(found.session, caller(settings).project)
    finally:
        archive.close()
    result = found.to_json()
    del result["notes"]  # already in the call: the conversation keeps both, so say it once
    drop = found.drop
    said = (
        f"The next request drops {drop.tool_calls} tool calls, {drop.tool_results} results and "
        f"{drop.thinking_blocks} thinking blocks (about {drop.tokens} tokens)."
        if drop is not None
        else "What the next request drops is not known here (the proxy decides at the cut)."
    )
    result["text"] = (
        f"Checkpoint {found.id} recorded for session {found.session}. {said} "
        f"`recall` with checkpoint={found.id} lists what it removed."
    ) + (f"\n\n{found.ledger}" if found.ledger else "")
    return result


def _session_conversation(settings: Settings) -> Any:
    """The session this server runs in (a Claude Code session, a Codex thread: each agent CLI's
    session folder in turn), when its file can be found; else None."""
    from ipse.agents._shared import agents_with_sessions

    session = settings.session.removeprefix(CLAUDE_CODE_PREFIX)
    found = (
        (a.session_file(session, settings.cwd), a.session_format) for a in agents_with_sessions()
    )
    path, kind = next(((p, k) for p, k in found if p is not None), (None, None))
    if path is None or kind is None:
        return None
    from ipse.errors import IpseError
    from ipse.transcript import read_conversation

    try:
        return read_conversation(path, kind, skip_bad_lines=True)
    except IpseError:
        return None


# ------------------------------------------------------------------------------------ state


def _folder(settings: Settings) -> Path:
    folder = settings.state_dir
    return folder if folder.is_absolute() else settings.cwd / folder


def _state_resume(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.statedir import resume

    folder = _folder(settings)
    if not folder.is_dir():
        raise InputError(
            f"no state folder at {folder} (create it with `ipse state init --goal TEXT`)"
        )
    view = resume(folder)
    budget = args.get("budget")
    count = None
    if budget is not None:
        from ipse._tokens import default_counter

        count = default_counter().count
    text = view.text(budget, count)
    return {"folder": str(folder), "warnings": list(view.warnings), "text": text}


def _record(settings: Settings, record: Any, done: str) -> dict[str, Any]:
    return {"folder": str(_folder(settings)), "wal_line": record.seq, "text": done}


def _state_next(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.statedir import set_next

    record = set_next(_folder(settings), args["text"])
    return _record(settings, record, f"next step set (WAL line {record.seq})")


def _state_invariant(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.statedir import add_invariant

    record = add_invariant(_folder(settings), args["text"], args["reason"])
    return _record(settings, record, f"invariant appended (WAL line {record.seq})")


def _state_checkpoint(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.statedir import log_transition

    record = log_transition(_folder(settings), args["message"])
    return _record(settings, record, f"checkpoint logged (WAL line {record.seq})")


# ------------------------------------------------------------------------------------- twin


def _twin_id(settings: Settings) -> str:
    if not settings.twin:
        raise UsageError("no twin: start the server with `ipse mcp --twin ID`")
    return settings.twin


def _twin_show(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse._redact import redact
    from ipse.twin import open_store
    from ipse.twin._shared import dump_state

    twin_id = _twin_id(settings)
    with open_store(settings.store_url) as store:
        snapshot = store.latest(twin_id)
        if snapshot is None:
            raise InputError(f"no snapshot of twin {twin_id!r} in {redact(store.url)}")
    state = dump_state(snapshot.state)
    return {
        "twin_id": twin_id,
        "version": snapshot.version,
        "state_hash": snapshot.state_hash,
        "state": state,
        "text": jsonio.dumps(state).decode(),
    }


# One writer per twin in this server: the calls of one model turn that touch the same twin take
# their turn here, so they apply in the order they arrived rather than racing for the store's
# one-statement write and retrying. A turn another process stored in between is applied on
# (`apply_turn` builds on the newest version); a lease held elsewhere with `store.lease` still
# raises the store's `WriterConflict`.
_TWIN_LOCKS: dict[tuple[str | None, str], threading.Lock] = {}
_TWIN_LOCKS_GUARD = threading.Lock()


def twin_lock(settings: Settings, twin_id: str) -> threading.Lock:
    """The lock the calls of this server take before they hold ``twin_id``'s lease."""
    key = (settings.store_url, twin_id)
    with _TWIN_LOCKS_GUARD:
        return _TWIN_LOCKS.setdefault(key, threading.Lock())


def _transition(op: str) -> Callable[[Settings, dict[str, Any]], dict[str, Any]]:
    def run(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
        from ipse.twin import apply_turn, open_store
        from ipse.twin._shared import load_config

        twin_id = _twin_id(settings)
        config = load_config(settings.twin_config) if settings.twin_config else None
        with twin_lock(settings, twin_id), open_store(settings.store_url) as store:
            turn = apply_turn(store, twin_id, [{"op": op, **args}], config=config)
        result = turn.to_json()
        result["text"] = (
            f"{op} applied; wrote v{turn.version}"
            if turn.written is not None
            else f"{op} applied; identity unchanged, nothing written"
        )
        return result

    return run


def _twin_rehydrate(settings: Settings, args: dict[str, Any]) -> dict[str, Any]:
    from ipse.twin import TwinConfig, open_store, rehydrate
    from ipse.twin._shared import load_config

    twin_id = _twin_id(settings)
    fmt = args.get("format", "text")
    if settings.twin_config is None and fmt != "text":
        raise UsageError(
            f"format {fmt}: a request prefix needs the twin's role; start the server with "
            "--twin-config FILE (format text works without it)"
        )
    config = load_config(settings.twin_config) if settings.twin_config else TwinConfig(role="")
    with open_store(settings.store_url) as store:
        found = rehydrate(store, twin_id, config)
    prefix = found.render(fmt)
    if settings.twin_config is None:  # no role: the resumption text alone
        prefix = found.context or ""
    return {
        "twin_id": twin_id,
        "cold": found.cold,
        "version": found.version,
        "format": fmt,
        "prefix": prefix,
        "text": prefix if isinstance(prefix, str) else jsonio.dumps(prefix).decode(),
    }


# ------------------------------------------------------------------------------------ table


def offered(settings: Settings) -> list[Tool]:
    """The tools a server started with ``settings`` offers: those that can work. Without a
    twin (``--twin``) the twin_* tools could only fail, and each request would carry their
    definitions for nothing."""
    return [t for t in tools() if settings.twin or not t.name.startswith(TWIN_PREFIX)]


def tools() -> list[Tool]:
    """Every tool, in the order they are listed (stable: a changed list busts prompt caches)."""
    from ipse.handoff._shared import DESCRIPTION, SCHEMA
    from ipse.mcp import _recall
    from ipse.twin._shared import TOOL_SPECS

    return [
        Tool("micro_handoff", DESCRIPTION, SCHEMA, _micro_handoff),
        Tool("recall", _recall.RECALL_DESCRIPTION, _recall.RECALL_SCHEMA, _recall.recall),
        Tool("archive_list", _recall.LIST_DESCRIPTION, _recall.LIST_SCHEMA, _recall.listing),
        *_state_tools(),
        *_twin_tools(TOOL_SPECS),
    ]


def _state_tools() -> list[Tool]:
    """The tools that read and write the project's state directory."""
    return [
        Tool(
            "state_resume",
            "Read the project's state directory in order (goal, invariants, next step, last "
            "log entry). Call it at the start and after your context was reset.",
            _object(
                {
                    "budget": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Keep the text within this many tokens.",
                    }
                }
            ),
            _state_resume,
        ),
        Tool(
            "state_next",
            "Set the next step (replaces the previous one; the log keeps it). Call it when you "
            "finish a step or change plan.",
            _object({"text": {"type": "string", "description": "The next step."}}, ["text"]),
            _state_next,
        ),
        Tool(
            "state_invariant",
            "Append a decision or a rejected approach, with its reason, to the invariants "
            "(append-only: it holds for the rest of the task).",
            _object(
                {
                    "text": {"type": "string", "description": "The decision or rule."},
                    "reason": {"type": "string", "description": "Why it holds."},
                },
                ["text", "reason"],
            ),
            _state_invariant,
        ),
        Tool(
            "state_checkpoint",
            "Log one state transition (what just happened) in the state directory's log.",
            _object(
                {"message": {"type": "string", "description": "What happened, one line."}},
                ["message"],
            ),
            _state_checkpoint,
        ),
    ]


def _twin_tools(specs: Sequence[tuple[str, str, dict[str, Any]]]) -> list[Tool]:
    """The tools of the twin: show it, one per transition (``specs``: name, description,
    schema), and the text that rehydrates it."""
    table = [
        Tool(
            "twin_show",
            "Show the twin's current identity state: counterparty, facts, commitments, loops.",
            _object({}),
            _twin_show,
        ),
    ]
    table.extend(Tool(f"twin_{n}", d, s, _transition(n)) for n, d, s in specs)
    table.append(
        Tool(
            "twin_rehydrate",
            "The text (or request prefix) that resumes the twin in a fresh context: its role, "
            "facts, commitments and open loops, in a fixed order.",
            _object(
                {
                    "format": {
                        "type": "string",
                        "enum": ["text", "anthropic", "openai"],
                        "description": "Shape of the prefix (default text).",
                    }
                }
            ),
            _twin_rehydrate,
        )
    )
    return table


__all__ = [
    "RECALL_CHARS",
    "TWIN_PREFIX",
    "Settings",
    "Tool",
    "default_session",
    "for_call",
    "offered",
    "tools",
    "twin_lock",
]
