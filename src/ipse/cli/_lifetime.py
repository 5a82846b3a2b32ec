"""How long what a command built lives: until the process ends, when the command line says so.

A command that runs once and exits frees everything it read, object by object, when the
function holding it returns and again when the interpreter shuts down: for a session of 72 MB
that is about a sixth of parsing it, for a gigabyte several seconds, and nobody waits for the
memory. The command line's entry (`ipse.cli.main.entry`) therefore ends one-shot commands with
`finish`: it flushes the standard streams, runs the exit handlers and ends the process without
the teardown. The commands hand what the library gave them to `keep`, so that it is not freed
on the way either.

This is the command line's choice alone: the library never calls it, so a library caller, a
server or a test runner frees its objects and exits as usual.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

_kept: list[object] | None = None


def arm() -> None:
    """From now on `keep` keeps objects until `finish` ends the process."""
    global _kept
    if _kept is None:
        _kept = []


def keep(*values: object) -> None:
    """Keep ``values`` alive until the process ends, when `arm` was called (else nothing)."""
    if _kept is not None:
        _kept.extend(values)


def finish(code: int) -> NoReturn:
    """End the process with ``code`` after flushing the standard streams and running the exit
    handlers, without freeing every object on the way out.

    Falls back to an ordinary exit (which reports what it must) when a stream cannot be
    flushed or another thread is still running."""
    if threading.active_count() > 1 or not _flushed():
        sys.exit(code)  # (the interpreter's own exit reports a stream it cannot flush: 120)
    atexit._run_exitfuncs()
    if not _flushed():  # what the exit handlers wrote
        code = code or 120
    os._exit(code)


def _flushed() -> bool:
    """Flush stdout and stderr; False when one of them cannot be."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            return False
    return True


__all__ = ["arm", "finish", "keep"]
