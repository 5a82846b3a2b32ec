"""The cache losses of each session: the prefix replay (``ipse prefix``) run on the sessions
that changed since they were last replayed, its breaks kept in the index by cause.

The replay reads a session whole and models its cache request by request: far more work than
the bill, so ``ipse usage`` runs it only when asked (``--losses``), only on Claude Code
sessions and Codex rollouts whose size differs from the one last replayed, and keeps what it
found with the file's entry: later runs show it without replaying. A break the replay charges
is kept with its time, cause and the dollars it cost beyond the request's ideal read.
Compaction calls are left out, as in ``ipse prefix``'s headline loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipse import _progress as progress
from ipse.errors import IpseError
from ipse.usage._collect import Collected, Folder, collect, reader_for
from ipse.usage._index import UsageIndex


def replay(path: Path, project: str, session: str) -> list[list[Any]]:
    """The breaks the prefix replay charges in one session, as the index keeps them: time,
    project, session, model, cause, tokens lost, dollars lost."""
    from ipse.prefix import analyze, read_requests

    log = read_requests(path)
    report = analyze(log.requests, warnings=log.warnings, merged=log.merged)
    out = []
    for row in report.rows:
        if row.compaction or row.cause is None or row.cost_lost_usd <= 0 or row.time is None:
            continue
        out.append([row.time.timestamp(), project, session, row.model or "", row.cause.kind,
                    row.lost_tokens, row.cost_lost_usd])  # fmt: skip
    return out


def replay_losses(
    collected: Collected,
    folders: Sequence[Folder],
    paths: Sequence[Path],
    *,
    store: str | None = None,
) -> Collected:
    """Replay every session that changed since its last replay, keep what was found in the
    index, and collect the ledger again with it."""
    index = UsageIndex(store)
    try:
        entries = index.files()
        todo = [
            e
            for e in entries.values()
            if getattr(reader_for(e.reader), "replayed", False)
            and e.replayed_size != e.size
            and Path(e.path).parent.name != "subagents"
        ]
        calls = index.calls([e.path for e in todo]) if todo else {}
        done = []
        for number, entry in enumerate(todo, start=1):
            found = calls.get(entry.path) or []
            project = found[0].project if found else ""
            session = found[0].session if found else Path(entry.path).stem
            try:
                entry.losses = replay(Path(entry.path), project, session)
            except IpseError as exc:
                collected.warnings.append(f"{entry.path}: not replayed: {exc}")
                entry.losses = []
            entry.replayed_size = entry.size
            done.append(entry)
            progress.update("replaying sessions", number, len(todo))
        index.set_losses(done)
        index.forget_ledger()
    finally:
        index.close()
    again = collect(folders, paths, store=store)
    again.read = collected.read
    again.warnings = collected.warnings + again.warnings
    return again


__all__ = ["replay", "replay_losses"]
