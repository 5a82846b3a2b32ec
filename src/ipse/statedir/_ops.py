"""The writes that change a state folder: init, invariant, next, checkpoint.

Each takes the folder lock, appends its WAL line (fsynced) and changes the file it describes in
the order that keeps a crash harmless:

- ``next`` logs first, then replaces ``99_next.md`` atomically; a crash in between leaves the
  old file and a WAL line naming the new step, and ``resume`` then prints the WAL's step.
- ``invariant`` appends to ``10_invariants.md`` first, then logs the new prefix (length and
  sha256); a crash in between leaves text the log does not vouch for, which ``verify`` reports.
- ``init`` writes the files, then the log's first line with the goal's hash (the goal latch).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ipse.errors import UsageError
from ipse.fileio import read_bytes
from ipse.statedir import _files as files
from ipse.statedir import _wal as wal
from ipse.statedir._gitinfo import short_revision

INVARIANTS_HEADER = (
    "# Invariants\n\n"
    "Decisions and rejected approaches, with their reasons. Append-only: add with\n"
    "`ipse state invariant TEXT --reason TEXT`; `ipse state verify` catches any rewrite.\n\n"
)
NO_NEXT = "(no next step recorded yet: decide the first step and run `ipse state next TEXT`)"


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data`` as hex."""
    return hashlib.sha256(data).hexdigest()


def _need_text(value: str, what: str) -> str:
    if not value.strip():
        raise UsageError(f"{what} is empty")
    return value


def goal_document(goal: str, done: str | None) -> str:
    """The text of ``00_goal.md``."""
    text = f"# Goal\n\n{goal.strip()}\n"
    if done and done.strip():
        text += f"\n## Done when\n\n{done.strip()}\n"
    return text


def next_document(text: str) -> bytes:
    """The bytes of ``99_next.md`` for a next step."""
    return (text.rstrip("\n") + "\n").encode("utf-8")


def invariant_entry(text: str, reason: str) -> str:
    """One appended invariant: a list item with its reason, continuation lines indented."""
    body = "\n  ".join(text.strip().splitlines())
    why = "\n  ".join(reason.strip().splitlines())
    return f"- {body}\n  Reason: {why}\n"


def init(folder: Path, goal: str, done: str | None = None) -> wal.Record:
    """Create the state folder's files; refused when a goal or a log is already there."""
    _need_text(goal, "the goal")
    folder.mkdir(parents=True, exist_ok=True)
    with files.locked(folder):
        for name in (files.GOAL, files.WAL):
            if (folder / name).exists():
                raise UsageError(
                    f"{folder / name} already exists: the goal is written once "
                    "(a second init is refused)"
                )
        goal_bytes = goal_document(goal, done).encode("utf-8")
        inv_bytes = INVARIANTS_HEADER.encode("utf-8")
        next_bytes = next_document(NO_NEXT)
        files.write_file(folder / files.GOAL, goal_bytes)
        if not (folder / files.INVARIANTS).exists():
            files.write_file(folder / files.INVARIANTS, inv_bytes)
        else:
            inv_bytes = read_bytes(folder / files.INVARIANTS)
        files.write_file(folder / files.NEXT, next_bytes)
        body = wal.new_body(
            "init",
            goal.strip(),
            short_revision(files.project_root(folder)),
            goal_sha256=sha256_hex(goal_bytes),
            prefixes=[[len(inv_bytes), sha256_hex(inv_bytes)]],
            next_text=NO_NEXT,
            next_sha256=sha256_hex(next_bytes),
        )
        line = wal.first_line(body)
        files.write_file(folder / files.WAL, line)
    raw = line.rstrip(b"\n")
    return wal.Record(wal.decode(raw) or {}, raw, 1)


def add_invariant(folder: Path, text: str, reason: str) -> wal.Record:
    """Append a decision or rejected approach with its reason, then log the new prefix."""
    _need_text(text, "the invariant")
    _need_text(reason, "the reason")
    files.require_folder(folder)
    path = folder / files.INVARIANTS
    with files.locked(folder):
        old = read_bytes(path) if path.exists() else b""
        old_tail = b"\n" if old and not old.endswith(b"\n") else b""
        entry = old_tail + invariant_entry(text, reason).encode("utf-8")
        files.append_fsync(path, entry)
        new = old + entry
        return wal.append(
            folder / files.WAL,
            wal.new_body(
                "invariant",
                text.strip(),
                short_revision(files.project_root(folder)),
                reason=reason.strip(),
                length=len(new),
                sha256=sha256_hex(new),
            ),
        )


def set_next(folder: Path, text: str) -> wal.Record:
    """Set the program counter: log the step (fsynced), then replace ``99_next.md`` atomically."""
    _need_text(text, "the next step")
    files.require_folder(folder)
    data = next_document(text)
    with files.locked(folder):
        record = wal.append(
            folder / files.WAL,
            wal.new_body(
                "next",
                text.rstrip("\n"),
                short_revision(files.project_root(folder)),
                sha256=sha256_hex(data),
            ),
        )
        files.write_file(folder / files.NEXT, data)
    return record


def checkpoint(folder: Path, message: str, kind: str = "checkpoint") -> wal.Record:
    """Log one state transition."""
    _need_text(message, "the checkpoint message")
    files.require_folder(folder)
    with files.locked(folder):
        return wal.append(
            folder / files.WAL,
            wal.new_body(kind, message, short_revision(files.project_root(folder))),
        )
