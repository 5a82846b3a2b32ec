"""The `InputError` an `OSError` becomes where ipse reads or writes a path the user named: one
message shape (``PATH: cannot read: REASON``, ``PATH: permission denied``) for every command.
Shared by every package, so it lives in ``ipse`` itself; the exception classes are
`ipse.errors`'."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ipse.errors import InputError


def os_error(exc: OSError, doing: str, path: str | Path) -> InputError:
    """The `InputError` for an `OSError` met while ``doing`` something to ``path``.

    ``raise os_error(exc, "read", path) from exc`` gives ``PATH: cannot read: REASON``.
    """
    return InputError(f"cannot {doing}: {exc.strerror or exc}", path=path)


_UNREACHABLE = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "not a folder on the way to it",
    errno.ENAMETOOLONG: "name too long",
    errno.ELOOP: "too many levels of symbolic links",
}


def unreachable_path(exc: BaseException) -> InputError | None:
    """The `InputError` for an `OSError` saying a path cannot be reached (permission denied on
    it or on a folder above it, a file where a folder should be, a name too long, a loop of
    links): ``PATH: permission denied``; None for any other exception."""
    if not isinstance(exc, OSError) or exc.errno not in _UNREACHABLE:
        return None
    if not isinstance(exc.filename, str | bytes | os.PathLike):
        return None
    return InputError(_UNREACHABLE[exc.errno], path=os.fsdecode(exc.filename))


__all__ = ["os_error", "unreachable_path"]
