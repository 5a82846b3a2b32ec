"""The library's notes: the ``ipse`` loggers, and the command line's wish to see them on stderr.

Library code makes its logger with `logger` (a standard `logging` logger: an application routes
the notes as it likes). The command line asks for them as lines on stderr (`to_stderr`) before
it knows whether the command will say anything. Most commands never do, and importing `logging`
costs them more than their work, so the handler goes on the ``ipse`` logger when the first
logger is made, or at once where `logging` is loaded already.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

_write: Callable[[str], None] | None = None  # where the command line wants the notes


def logger(name: str) -> logging.Logger:
    """The logger ``name`` (under ``ipse``), with the command line's handler where it asked."""
    import logging

    if _write is not None:
        _install(_write)
    return logging.getLogger(name)


def to_stderr(write: Callable[[str], None]) -> None:
    """Send the notes of every ``ipse`` logger (warnings and worse) to ``write``, one line
    each, and not on to the application's handlers."""
    global _write
    _write = write
    if "logging" in sys.modules:
        _install(write)


def _install(write: Callable[[str], None]) -> None:
    import logging

    root = logging.getLogger("ipse")
    if any(getattr(h, "ipse_notes", False) for h in root.handlers):
        return

    class Notes(logging.Handler):
        ipse_notes = True

        def emit(self, record: logging.LogRecord) -> None:
            write(self.format(record))

    root.addHandler(Notes(logging.WARNING))
    root.propagate = False
