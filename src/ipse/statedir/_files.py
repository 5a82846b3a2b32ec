"""The layout of a state folder: which files it holds, their reading order, and its lock.

State files are named ``NN_name.md``; the lexicographic order of the names is the reading order
(``00_goal.md``, ``10_invariants.md``, ``99_next.md``, and any the user adds between them).
Everything else ipse keeps there is a dot-file (the write-ahead log, rotated logs, receipts,
the lock), so agents and ``resume`` never mistake bookkeeping for state. Every change to the
folder happens under one exclusive ``fcntl`` lock on ``.lock``, which serialises concurrent
writers across processes.

The folder may sit in a repository someone else wrote, so nothing here follows a symbolic
link or opens anything but a regular file: every open uses ``O_NOFOLLOW`` (and ``O_NONBLOCK``,
so a FIFO never hangs a command) and checks ``fstat`` before reading or writing, and a state
file that is a link, a FIFO, a device or a folder is refused by name (`NotRegular`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from pathlib import Path

from ipse._os_errors import os_error
from ipse._plain import Plain
from ipse.errors import InputError
from ipse.fileio import StrPath, fsync_dir

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_DIR = "state"
GOAL = "00_goal.md"
INVARIANTS = "10_invariants.md"
NEXT = "99_next.md"
WAL = ".wal"
RECEIPTS = ".receipts.jsonl"
LOCK = ".lock"
PENDING_INIT = ".init.pending"
REQUIRED = (GOAL, INVARIANTS, NEXT, WAL)
OURS = (WAL, RECEIPTS, LOCK, PENDING_INIT)

STATE_FILE = re.compile(r"^\d\d_[^/\\]+\.md$")
ROTATED_WAL = re.compile(r"^\.wal\.(\d{4,})$")
TEMP_FILE = re.compile(r"^\..+\.tmp$")


def is_state_file(name: str) -> bool:
    """Whether a file name is a state file (``NN_name.md``), read by ``resume``."""
    return bool(STATE_FILE.match(name))


def state_files(folder: StrPath) -> list[str]:
    """The state files in the folder, in reading (lexicographic) order."""
    folder = Path(folder)
    try:
        names = os.listdir(folder)
    except FileNotFoundError as exc:
        raise InputError("no state folder here (run `ipse state init` first)", path=folder) from exc
    except OSError as exc:
        raise os_error(exc, "list", folder) from exc
    return sorted(n for n in names if is_state_file(n))


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    for test, what in _KINDS:
        if test(mode):
            return what
    return "not a regular file"


class NotRegular(InputError):
    """A file in the state folder that is a link, FIFO, device or folder: never read or written
    through, because a hostile repository could point it at a secret or at ``~/.bashrc``."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"{what}, not a regular file: ipse does not read or write through it "
            "(replace it with a regular file)",
            path=path,
        )
        self.what = what


def odd_kind(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``lstat``: links not
    followed); None for a regular file or a missing one."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot stat: {exc.strerror or exc}", path=path) from exc
    return None if stat.S_ISREG(mode) else _kind(mode)


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (a link to one does not count)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


FILE_MODE = 0o600
"""The mode of a file ipse creates in a state folder: goals, invariants, steps and the log are
the session's own words, private like the archive (an existing file keeps its mode)."""

FOLDER_MODE = 0o700


def open_regular(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` that refuses links, FIFOs, devices and folders (`NotRegular`); the caller
    closes the descriptor. ``FileNotFoundError`` and other ``OSError`` pass through."""
    what = odd_kind(path)
    if what is not None:
        raise NotRegular(path, what)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise NotRegular(path, odd_kind(path) or "not a regular file") from exc
        raise
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):  # swapped between the lstat and the open
        os.close(fd)
        raise NotRegular(path, _kind(st_mode))
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: Path) -> bytes | None:
    """A regular file's bytes, or None when it is missing (`NotRegular` for anything else)."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    finally:
        os.close(fd)


def need_bytes(path: Path) -> bytes:
    """A regular file's bytes; a missing one is an `InputError`."""
    data = read_bytes(path)
    if data is None:
        raise InputError("cannot read: no such file", path=path)
    return data


class Unexpected(Plain):
    """A file in the state folder that is neither state nor ipse's bookkeeping."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why


def unexpected_files(folder: Path) -> list[Unexpected]:
    """Files that do not belong in the folder, with why each is odd; ``resume`` ignores them."""
    found: list[Unexpected] = []
    for name in sorted(os.listdir(folder)):
        path = folder / name
        what = odd_kind(path)
        if what == "a folder" and not is_state_file(name):
            found.append(Unexpected(name, "a folder inside the state folder; ignored"))
        elif what is not None:
            found.append(
                Unexpected(name, f"{what}, not a regular file: ipse never reads through it")
            )
        elif is_state_file(name) or name in OURS or ROTATED_WAL.match(name):
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
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def require_folder(folder: Path) -> None:
    """Raise a one-line `InputError` unless ``folder`` is an initialised state folder."""
    if not folder.is_dir():
        raise InputError("no state folder here (run `ipse state init` first)", path=folder)
    what = odd_kind(folder / WAL)
    if what is not None:
        raise NotRegular(folder / WAL, what)
    if not is_regular(folder / WAL) and not is_regular(folder / PENDING_INIT):
        raise InputError("not an ipse state folder: no .wal (run `ipse state init`)", path=folder)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's exclusive lock for the block (writers only: ``resume`` reads without
    it, because every write leaves a consistent state at each step)."""
    try:
        fd = open_regular(folder / LOCK, os.O_RDWR | os.O_CREAT, FILE_MODE)
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
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
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
    `unexpected_files` reports. Permissions are kept (`FILE_MODE`, 0600, for a new file).
    """
    what = odd_kind(path)
    if what is not None:
        raise NotRegular(path, what)
    try:
        mode = os.lstat(path).st_mode & 0o777
    except OSError:
        mode = FILE_MODE
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a stray one (or a link planted there) is replaced, never followed
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
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
