"""The writes that change a state folder: init, invariant, next, checkpoint.

Each takes the folder lock, appends its WAL line (fsynced) and changes the file it describes in
the order that keeps a crash harmless:

- ``next`` logs first, then replaces ``99_next.md`` atomically; a crash in between leaves the
  old file and a WAL line naming the new step, and ``resume`` then prints the WAL's step.
- ``invariant`` appends to ``10_invariants.md`` first, then logs the new prefix (its start,
  length and sha256); a crash in between leaves text the log does not vouch for, which
  ``verify`` flags until it is explained (`explain`).
- ``init`` first writes its whole intent (every file and the log's first line) to
  ``.init.pending``, then the files, then the log (the goal latch), then removes the intent.

Every writer takes the lock through `writing`, which first finishes whatever a killed writer
left half done (`recover`): a pending init is completed, a logged ``next`` whose file was
never replaced is redone from its WAL record (once, with a note on the
``ipse.statedir`` logger), and stray temporary files are removed. ``explain`` vouches for text
someone added to ``10_invariants.md`` by hand, which ``verify`` flags until then.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ipse import _notes
from ipse.errors import InputError, UsageError
from ipse.fileio import StrPath, fsync_dir
from ipse.statedir import _files as files
from ipse.statedir import _json as state_json
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
    """``value`` when it is text a state file can hold: not blank, and UTF-8 (a lone
    surrogate, from an argument that was not UTF-8 or a tool call's JSON escape, is refused
    before anything is written)."""
    if not value.strip():
        raise UsageError(f"{what} is empty")
    _need_utf8(value, what)
    return value


def _need_utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{what}: not valid UTF-8 (character {exc.start + 1})") from None


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


LOG = _notes.logger("ipse.statedir")


def _say(note: str) -> None:
    LOG.warning("ipse: %s", note)


def _remove_strays(folder: Path) -> None:
    for name in sorted(os.listdir(folder)):
        if files.TEMP_FILE.match(name) and files.odd_kind(folder / name) != "a folder":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
            _say(f"removed {folder / name}, left over by a write that was killed")


def _finish_init(folder: Path) -> bool:
    """Complete an init that was killed after writing its intent; True when one was pending."""
    pending = folder / files.PENDING_INIT
    raw = files.read_bytes(pending)
    if raw is None:
        return False
    if not files.is_regular(folder / files.WAL):
        try:
            intent = state_json.loads(raw)
            documents = {str(k): str(v).encode("utf-8") for k, v in intent["files"].items()}
            line = str(intent["wal"]).encode("ascii")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError("an interrupted init left an unreadable intent", path=pending) from exc
        if not set(documents) <= {files.GOAL, files.INVARIANTS, files.NEXT}:
            raise InputError("an init intent names files init never writes", path=pending)
        for name, data in documents.items():
            files.write_file(folder / name, data)
        files.write_file(folder / files.WAL, line)
        _say(f"finished the interrupted `ipse state init` of {folder}/")
    wal.anchor(folder / files.WAL, _first_record(folder))
    os.unlink(pending)
    fsync_dir(folder)
    return True


def _first_record(folder: Path) -> wal.Record:
    scan_first = wal.read_all(folder / files.WAL).records
    if not scan_first:
        raise InputError("the log holds no valid record", path=folder / files.WAL)
    return scan_first[0]


def previous_step(path: Path) -> str | None:
    """The sha256 of the next step set before the newest record (None when there is none)."""
    seen_last = False
    for raw in wal.iter_lines_reversed(path):
        data = wal.decode(raw)
        if data is None:
            continue
        if not seen_last:
            seen_last = True
            continue
        step = wal.Record(data, raw).next_step()
        if step is not None:
            return step[1]
    return None


def _redo_next(folder: Path, record: wal.Record) -> None:
    path = folder / files.NEXT
    step = record.next_step()
    if step is None or files.odd_kind(path) is not None:
        return
    data = files.read_bytes(path)
    document = next_document(step[0])
    if sha256_hex(document) != step[1] or (data is not None and sha256_hex(data) == step[1]):
        return
    if data is not None and sha256_hex(data) != previous_step(folder / files.WAL):
        return  # not the step before: edited by hand, which verify reports
    files.write_file(path, document)
    _say(f"finished the interrupted `ipse state next` (WAL line {record.seq}) in {path}")


def recover(folder: Path) -> None:
    """Finish what a killed writer left half done (caller holds the lock; see the docstring)."""
    _finish_init(folder)
    _remove_strays(folder)
    if not files.is_regular(folder / files.WAL):
        return
    last = wal.tail(folder / files.WAL).last
    if last is None:
        return
    if last.kind == "next":
        _redo_next(folder, last)


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Hold the folder lock, after finishing any interrupted write (`recover`)."""
    with files.locked(folder):
        recover(folder)
        yield


def _init_record(folder: Path) -> wal.Record:
    first = _first_record(folder)
    return wal.Record(first.data, first.raw, 1)


def init(folder: StrPath, goal: str, done: str | None = None) -> wal.Record:
    """Create the state folder's files; refused when a goal or a log is already there.

    An init killed half way is finished by the next command (or by this one, which then
    succeeds when it asks for the same goal).
    """
    folder = Path(folder)
    _need_text(goal, "the goal")
    if done is not None:
        _need_utf8(done, "the done-when text")
    folder.mkdir(mode=files.FOLDER_MODE, parents=True, exist_ok=True)
    goal_bytes = goal_document(goal, done).encode("utf-8")
    with files.locked(folder):
        finished = _finish_init(folder)
        if finished and files.read_bytes(folder / files.GOAL) == goal_bytes:
            return _init_record(folder)
        for name in (files.GOAL, files.WAL):
            if os.path.lexists(folder / name):
                raise UsageError(
                    f"{folder / name} already exists: the goal is written once "
                    "(a second init is refused)"
                )
        _remove_strays(folder)
        existing = files.read_bytes(folder / files.INVARIANTS)
        inv_bytes = existing if existing is not None else INVARIANTS_HEADER.encode("utf-8")
        next_bytes = next_document(NO_NEXT)
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
        documents = {files.GOAL: goal_bytes, files.INVARIANTS: inv_bytes, files.NEXT: next_bytes}
        intent: dict[str, Any] = {
            "files": {k: v.decode("utf-8", "surrogateescape") for k, v in documents.items()},
            "wal": line.decode("ascii"),
        }
        files.write_file(folder / files.PENDING_INIT, json.dumps(intent).encode("utf-8"))
        for name, data in documents.items():
            if name != files.INVARIANTS or existing is None:
                files.write_file(folder / name, data)
        files.write_file(folder / files.WAL, line)
        _finish_init(folder)  # anchors the log and removes the intent
    return _init_record(folder)


def add_invariant(folder: StrPath, text: str, reason: str) -> wal.Record:
    """Append a decision or rejected approach with its reason, then log the new prefix."""
    folder = Path(folder)
    _need_text(text, "the invariant")
    _need_text(reason, "the reason")
    files.require_folder(folder)
    path = folder / files.INVARIANTS
    with writing(folder):
        old = files.read_bytes(path) or b""
        lead = b"\n" if old and not old.endswith(b"\n") else b""
        entry = lead + invariant_entry(text, reason).encode("utf-8")
        new = old + entry
        files.append_fsync(path, entry)
        return wal.append(
            folder / files.WAL,
            wal.new_body(
                "invariant",
                text.strip(),
                short_revision(files.project_root(folder)),
                reason=reason.strip(),
                start=len(old),
                length=len(new),
                sha256=sha256_hex(new),
            ),
        )


def explain(folder: StrPath, reason: str) -> wal.Record:
    """Vouch for text added to ``10_invariants.md`` by hand: log its current length and sha256
    with the reason, so ``verify`` stops flagging it."""
    folder = Path(folder)
    _need_text(reason, "the explanation")
    files.require_folder(folder)
    path = folder / files.INVARIANTS
    with writing(folder):
        data = files.need_bytes(path)
        return wal.append(
            folder / files.WAL,
            wal.new_body(
                "vouch",
                reason.strip(),
                short_revision(files.project_root(folder)),
                length=len(data),
                sha256=sha256_hex(data),
            ),
        )


def set_next(folder: StrPath, text: str) -> wal.Record:
    """Set the program counter: log the step (fsynced), then replace ``99_next.md`` atomically."""
    folder = Path(folder)
    _need_text(text, "the next step")
    files.require_folder(folder)
    data = next_document(text)
    with writing(folder):
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


def log_transition(folder: StrPath, message: str, kind: str = "checkpoint") -> wal.Record:
    """Log one state transition."""
    folder = Path(folder)
    _need_text(message, "the checkpoint message")
    files.require_folder(folder)
    with writing(folder):
        return wal.append(
            folder / files.WAL,
            wal.new_body(kind, message, short_revision(files.project_root(folder))),
        )
