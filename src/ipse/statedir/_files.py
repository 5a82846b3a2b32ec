"""The layout of a state folder: which files it holds, their reading order, and its lock.

State files are named ``NN_name.md``; the lexicographic order of the names is the reading order
(``00_goal.md``, ``10_invariants.md``, ``99_next.md``, and any the user adds between them).
Everything else ipse keeps there is a dot-file (the write-ahead log, rotated logs, receipts,
the lock), so agents and ``resume`` never mistake bookkeeping for state. Every change to the
folder happens under one exclusive ``fcntl`` lock on ``.lock``, which serialises concurrent
writers across processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ipse.errors import InputError, os_error
from ipse.fileio import fsync_dir

DEFAULT_DIR = "state"
GOAL = "00_goal.md"
INVARIANTS = "10_invariants.md"
NEXT = "99_next.md"
WAL = ".wal"
RECEIPTS = ".receipts.jsonl"
LOCK = ".lock"
REQUIRED = (GOAL, INVARIANTS, NEXT, WAL)

STATE_FILE = re.compile(r"^\d\d_[^/\\]+\.md$")
ROTATED_WAL = re.compile(r"^\.wal\.(\d{4,})$")
TEMP_FILE = re.compile(r"^\..+\.tmp$")


def is_state_file(name: str) -> bool:
    """Whether a file name is a state file (``NN_name.md``), read by ``resume``."""
    return bool(STATE_FILE.match(name))


def state_files(folder: Path) -> list[str]:
    """The state files in the folder, in reading (lexicographic) order."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError as exc:
        raise InputError("no state folder here (run `ipse state init` first)", path=folder) from exc
    except OSError as exc:
        raise os_error(exc, "list", folder) from exc
    return sorted(n for n in names if is_state_file(n) and (folder / n).is_file())


@dataclass(frozen=True)
class Unexpected:
    """A file in the state folder that is neither state nor ipse's bookkeeping."""

    name: str
    why: str


def unexpected_files(folder: Path) -> list[Unexpected]:
    """Files that do not belong in the folder, with why each is odd; ``resume`` ignores them."""
    found: list[Unexpected] = []
    for name in sorted(os.listdir(folder)):
        path = folder / name
        if path.is_dir():
            found.append(Unexpected(name, "a folder inside the state folder; ignored"))
        elif is_state_file(name) or name in (WAL, RECEIPTS, LOCK) or ROTATED_WAL.match(name):
            continue
        elif TEMP_FILE.match(name):
            found.append(Unexpected(name, "left over from an interrupted write; safe to delete"))
        else:
            found.append(Unexpected(name, "not a state file (NN_name.md); ignored by resume"))
    return found


def rotated_wals(folder: Path) -> list[str]:
    """Names of the rotated write-ahead logs, oldest first."""
    names = [n for n in os.listdir(folder) if ROTATED_WAL.match(n)]
    return sorted(names, key=lambda n: int(n.rsplit(".", 1)[1]))


def read_text(path: Path) -> str | None:
    """A state file's text, or None when it is missing; undecodable bytes are replaced."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, "read", path) from exc


def require_folder(folder: Path) -> None:
    """Raise a one-line `InputError` unless ``folder`` is an initialised state folder."""
    if not folder.is_dir():
        raise InputError("no state folder here (run `ipse state init` first)", path=folder)
    if not (folder / WAL).is_file():
        raise InputError("not an ipse state folder: no .wal (run `ipse state init`)", path=folder)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's exclusive lock for the block (writers only: ``resume`` reads without
    it, because every write leaves a consistent state at each step)."""
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise os_error(exc, "open the lock", folder) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def append_fsync(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created when missing) and fsync it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise os_error(exc, "append", path) from exc


def write_file(path: Path, data: bytes) -> None:
    """Replace a state file atomically: temporary file, fsync, rename, fsync of the folder.

    The caller holds the folder lock, so the temporary name can be fixed (``.NAME.tmp``); a
    crash leaves the old file or the new one, and at worst a stray temporary file that
    `unexpected_files` reports. Permissions are kept (0644 for a new file).
    """
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        mode = 0o644
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise os_error(exc, "write", path) from exc
    fsync_dir(path.parent)


def project_root(folder: Path) -> Path:
    """The folder the state folder belongs to: its parent (where git and artifacts live)."""
    return Path(os.path.abspath(folder)).parent
