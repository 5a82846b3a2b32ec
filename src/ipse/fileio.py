"""Reading input files with clear errors, writing output files atomically, and private files.

Every file ipse writes goes through `atomic_write`: a temporary file in the same folder,
fsync, rename over the target, fsync of the folder. A crash leaves either the old file or the
new one, never a torn mix, and bad input never leaves a half-written output behind.

Input is read only from regular files (`read_bytes`, `read_text`): a FIFO would block forever
and ``/dev/zero`` never ends, so both are refused by their type before anything is read, and a
size limit (``IPSE_MAX_INPUT_BYTES``, default 2 GiB) bounds what is read into memory. A text
input is judged by its size and its first bytes before it is read whole (`check_text_head`).

What ipse keeps for itself (databases, the archive, records, logs, pid files) can hold secrets
from tool output, so it is private to the user: `private_dir` makes folders 0700 and
`private_file` / `tighten` make files 0600, tightening existing ones on open. Outputs that carry
conversation content (a handed-off body, a report, an exported twin) are written with
``atomic_write(..., private=True)``: a new file is 0600 whatever the umask, and a file that
exists keeps its mode (``chmod`` is how a user shares one, and a rewrite keeps that choice).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from ipse._os_errors import os_error
from ipse.errors import InputError

TYPE_CHECKING = False  # (`typing` is not imported at run time: the hook's start)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO, TypeAlias

StrPath: TypeAlias = str | os.PathLike[str]
"""What a public function takes where it means a path: a ``str`` or any path-like."""

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
DEFAULT_MAX_INPUT = 2 * 1024**3
MAX_INPUT_ENV = "IPSE_MAX_INPUT_BYTES"


def max_input_bytes() -> int:
    """The largest input file ipse reads: ``IPSE_MAX_INPUT_BYTES``, else 2 GiB."""
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{MAX_INPUT_ENV}={raw!r}: not a whole number of bytes") from None
    if value <= 0:
        raise InputError(f"{MAX_INPUT_ENV}={raw!r}: must be a positive number of bytes")
    return value


def _open_regular(p: Path) -> tuple[int, int]:
    """An open descriptor on a regular file and its size; anything else is an `InputError`."""
    try:
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise InputError("no such file", path=p) from exc
    except IsADirectoryError as exc:
        raise InputError("is a folder, not a file", path=p) from exc
    except PermissionError as exc:
        raise InputError("permission denied", path=p) from exc
    except OSError as exc:
        raise os_error(exc, "read", p) from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError("is a folder, not a file", path=p)
        raise InputError(f"not a regular file ({_kind(info.st_mode)}); ipse reads files", path=p)
    return fd, info.st_size


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def read_bytes(path: str | Path, *, limit: int | None = None) -> bytes:
    """Read a whole regular file, translating OS errors into `InputError` naming the file.

    FIFOs, devices and sockets are refused; a file over ``limit`` bytes (default
    `max_input_bytes`) is refused with a message saying how to raise the limit.
    """
    p = Path(path)
    most = max_input_bytes() if limit is None else limit
    fd, size = _open_regular(p)
    try:
        if size > most:
            raise _too_large(p, size, most)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(most + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=p) from exc
    finally:
        os.close(fd)
    if len(data) > most:  # grew while being read
        raise _too_large(p, len(data), most)
    return data


def sha256_of(path: str | Path, *, limit: int | None = None) -> tuple[str, int]:
    """The sha256 (hex) and size of a regular file, read in chunks (never held whole), under
    the same refusals and size limit as `read_bytes`."""
    import hashlib  # (here: only receipts hash files)

    digest = hashlib.sha256()
    read = 0
    for chunk in read_chunks(path, limit=limit):
        digest.update(chunk)
        read += len(chunk)
    return digest.hexdigest(), read


def open_regular(path: str | Path) -> BinaryIO:
    """Open a regular file for streaming reads (a large log read line by line); FIFOs,
    devices and sockets are refused as in `read_bytes`, without blocking."""
    p = Path(path)
    fd, _ = _open_regular(p)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


_REPORT_BYTES = 1 << 20
_CHUNK_BYTES = 4 << 20
_LINE_BUFFER = 1 << 20


def _open_within(p: Path, limit: int | None) -> tuple[int, int, int]:
    """A regular file opened for blocking reads: (descriptor, size, the most that may be
    read); a file already over the limit is refused."""
    most = max_input_bytes() if limit is None else limit
    fd, size = _open_regular(p)
    if size > most:
        os.close(fd)
        raise _too_large(p, size, most)
    os.set_blocking(fd, True)
    return fd, size, most


def read_chunks(path: str | Path, *, limit: int | None = None) -> Iterator[bytes]:
    """A regular file in chunks of a few MB (never held whole), under the same refusals and
    size limit as `read_bytes`; progress is reported past the first MB."""
    from ipse import _progress as progress  # (here: the hook reads small files whole)

    p = Path(path)
    fd, size, most = _open_within(p, limit)
    read = 0
    label = f"reading {p.name}"
    try:
        with os.fdopen(fd, "rb", buffering=0) as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                read += len(chunk)
                if read > most:  # grew while being read
                    raise _too_large(p, read, most)
                if read >= _REPORT_BYTES:
                    progress.update(label, read, size)
                yield chunk
            progress.update(label, read, size)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=p) from exc


def read_lines(
    path: str | Path, *, limit: int | None = None, newlines: bool = False
) -> Iterator[bytes]:
    """The lines of a regular file without their newlines, one at a time, under the same
    refusals and size limit as `read_bytes` (as ``data.split(b"\\n")`` would give them, less
    the empty piece after a final newline); progress is reported past the first MB.
    ``newlines``: each line as read, its newline kept (no copy of the line without it).

    The file is read through one reused buffer of ``_LINE_BUFFER`` bytes (a line longer than
    that comes back whole): fresh chunks split into lists would cost a page fault for every
    4 KB read, about a fifth more than the parse of a session."""
    from ipse import _progress as progress  # (here: the hook reads small files whole)

    p = Path(path)
    fd, size, most = _open_within(p, limit)
    read = 0
    report_at = _REPORT_BYTES
    label = f"reading {p.name}"
    try:
        with os.fdopen(fd, "rb", buffering=_LINE_BUFFER) as handle:
            for line in handle:
                read += len(line)
                if read > most:  # grew while being read
                    raise _too_large(p, read, most)
                if read >= report_at:
                    progress.update(label, read, size)
                    report_at = read + _REPORT_BYTES
                yield line if newlines or line[-1:] != b"\n" else line[:-1]
            progress.update(label, read, size)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=p) from exc


TEXT_HEAD_BYTES = 8192
"""How much of a text input `check_text_head` reads to judge it."""


def check_text_head(
    path: str | Path,
    *,
    limit: int | None = None,
    expected: str = "JSON or JSONL",
    empty_ok: bool = False,
) -> None:
    """Refuse an input that cannot be read as text before any of it is read whole: not a
    regular file, over the size limit (`max_input_bytes`), empty, or binary (a NUL byte among
    its first `TEXT_HEAD_BYTES`; ``empty_ok``: an empty file passes, for the caller to say
    what it lacks). Every command that reads a file whole, or a line of it of
    unknown length, asks this first: a 1 GB sparse file is refused by its size or its first
    bytes, never after being read."""
    p = Path(path)
    fd, _, _ = _open_within(p, limit)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            head = handle.read(TEXT_HEAD_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=p) from exc
    finally:
        os.close(fd)
    check_head(head, p, whole=len(head) < TEXT_HEAD_BYTES and not empty_ok, expected=expected)


def check_head(
    head: bytes, path: str | Path, *, whole: bool, expected: str = "JSON or JSONL"
) -> None:
    """Refuse the first bytes of an input that is empty (when ``head`` is all of it) or
    binary."""
    if whole and not head.strip():
        raise InputError("the file is empty", path=path)
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError(f"a binary file, not {expected}", path=path, position=f"byte {nul}")


def _too_large(p: Path, size: int, most: int) -> InputError:
    return InputError(
        f"file too large ({size:,} bytes, limit {most:,}); raise the limit with "
        f"{MAX_INPUT_ENV}=BYTES",
        path=p,
    )


def read_text(path: str | Path, *, limit: int | None = None) -> str:
    """`read_bytes` decoded as UTF-8; invalid UTF-8 is an `InputError` with its byte offset."""
    data = read_bytes(path, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not valid UTF-8", path=path, position=f"byte {exc.start}") from exc


def private_dir(path: str | Path) -> Path:
    """Create ``path`` (and its parents) if needed, and make it 0700 (owner only)."""
    folder = Path(path)
    try:
        folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        tighten(folder)
    except OSError as exc:
        raise InputError(f"cannot create folder: {exc.strerror or exc}", path=folder) from exc
    return folder


def tighten(path: str | Path) -> None:
    """Remove group and other permissions from an existing file or folder.

    A missing path, or one owned by someone else (where chmod is refused), is left alone.
    """
    try:
        current = os.stat(path).st_mode & 0o7777
    except OSError:
        return
    if current & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, current & ~0o077)


def private_file(path: str | Path, *, append: bool = True) -> BinaryIO:
    """Open a private file for writing (created 0600, an existing one tightened to 0600).

    For records, logs and pid files: the file is created with mode 0600 atomically (no window
    in which another user can open it), and its folder is created 0700 if missing. ``append``
    adds to the end; otherwise the file is truncated.
    """
    target = Path(path)
    if not target.parent.exists():
        private_dir(target.parent)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(target, flags, PRIVATE_FILE)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from exc
    with contextlib.suppress(OSError):
        os.fchmod(fd, PRIVATE_FILE)
    return os.fdopen(fd, "ab" if append else "wb")


def fsync_dir(folder: str | Path) -> None:
    """Flush a folder's entries to disk (after a rename), where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _default_mode(target: Path, private: bool = False) -> int:
    """The mode a plain ``open(..., "w")`` would give: the existing file's, else 0o666 less
    the umask (a temporary file is created 0o600); a new ``private`` file is 0o600."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return PRIVATE_FILE if private else 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where the platform says it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)  # elsewhere: read it by setting it, then put it back
    os.umask(umask)
    return umask


def check_output(path: str | Path) -> None:
    """Refuse an output file (a user's ``-o``) whose folder does not exist or is not a folder:
    a mistyped path must not make a whole tree of folders. ``-`` (stdout) and devices pass."""
    target = Path(path)
    if str(target) == "-" or _is_special(target):
        return
    folder = target.parent if str(target.parent) else Path(".")
    blocker = _not_a_folder(folder)
    if blocker is not None:
        raise InputError(f"cannot write: {blocker} is not a directory", path=target)
    if not folder.is_dir():
        raise InputError(f"cannot write: the folder {folder} does not exist", path=target)


def atomic_write(
    path: str | Path,
    data: bytes | str,
    *,
    mode: int | None = None,
    private: bool = False,
    make_folders: bool = True,
) -> None:
    """Replace ``path`` with ``data`` atomically: temporary file, fsync, rename, fsync folder.

    ``mode`` sets the file's mode; otherwise an existing file keeps its own, and a new one gets
    what ``open`` would give it, or 0600 when ``private`` (conversation content). Missing
    folders are made, unless ``make_folders`` is false (a user's output: `check_output`)."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_special(target):
        _write_through(target, payload)
        return
    folder = target.parent if str(target.parent) else Path(".")
    if not make_folders:
        check_output(target)
    blocker = _not_a_folder(folder)
    if blocker is not None:
        raise InputError(f"cannot write: {blocker} is not a directory", path=target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        import tempfile  # here, not at the top: commands that only read never need it

        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise os_error(exc, "write", target) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode if mode is not None else _default_mode(target, private))
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise os_error(exc, "write", target) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def _not_a_folder(folder: Path) -> Path | None:
    """The nearest existing ancestor of ``folder`` (itself included) when it is not a folder:
    the file that stands where a folder of the output path would have to be."""
    for candidate in (folder, *folder.parents):
        try:
            mode = os.stat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None  # (permission denied, a loop: the write itself says why)
        return None if stat.S_ISDIR(mode) else candidate
    return None


def _is_special(target: Path) -> bool:
    """Whether ``target`` is an existing device, pipe or socket (``/dev/stdout``, a FIFO):
    renaming a file over it would replace the device node instead of writing to it."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_through(target: Path, payload: bytes) -> None:
    try:
        with open(target, "wb") as handle:
            handle.write(payload)
            handle.flush()
    except OSError as exc:
        raise os_error(exc, "write", target) from exc
