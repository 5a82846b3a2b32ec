"""Reading input files with clear errors, and writing output files atomically.

Every file ipse writes goes through `atomic_write`: a temporary file in the same folder,
fsync, rename over the target, fsync of the folder. A crash leaves either the old file or the
new one, never a torn mix, and bad input never leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ipse.errors import InputError, os_error


def read_bytes(path: str | Path) -> bytes:
    """Read a whole file, translating OS errors into `InputError` naming the file."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError as exc:
        raise InputError("no such file", path=p) from exc
    except IsADirectoryError as exc:
        raise InputError("is a folder, not a file", path=p) from exc
    except PermissionError as exc:
        raise InputError("permission denied", path=p) from exc
    except OSError as exc:
        raise os_error(exc, "read", p) from exc


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


def _default_mode(target: Path) -> int:
    """The mode a plain ``open(..., "w")`` would give: the existing file's, else 0o666 less
    the umask (a temporary file is created 0o600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


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


def atomic_write(path: str | Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: temporary file, fsync, rename, fsync folder."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_special(target):
        _write_through(target, payload)
        return
    folder = target.parent if str(target.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise os_error(exc, "write", target) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode if mode is not None else _default_mode(target))
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
