"""The one exception tree of ipse.

Every error ipse raises on purpose is an `IpseError`. Each class carries the process exit code
the command line uses for it, so the CLI needs exactly one handler (its group's ``main``)::

    IpseError                 2  (root; also the code of anything not listed below)
    ├── UsageError            2  a request that makes no sense (bad option or argument)
    │   └── PrefixEdit        2  an edit would rewrite history the prompt cache holds
    ├── InputError            2  input missing, unreadable or malformed (names path:position)
    │   ├── UnknownFormat     2  a format that cannot be detected or is not supported
    │   ├── InvalidConversation 2  a conversation that breaks its provider's rules
    │   ├── CutError          2  a handoff cut that cannot be placed
    │   └── NoStore           2  a command that only reads found no database (nothing created)
    ├── CheckFailed           1  a check ran and found a problem
    ├── StoreError            2  a storage backend failed or holds unusable data
    │   ├── ConnectionLost    2  the connection failed mid-statement: a write may have landed
    │   ├── WriterConflict   75  another writer holds the twin's lease: try again
    │   └── StaleWriter      75  this writer's lease was taken over: try again
    └── MissingExtra          2  an optional package extra is not installed

Exit codes: 0 ok, 1 a check found a problem, 2 bad input or usage, 75 (``EX_TEMPFAIL`` of
sysexits.h) another writer was busy with the same twin and nothing was written, so the same
command may simply run again; the CLI adds 3 for a bug (an exception outside this tree) and 130
for an interruption.

Foreign exceptions are translated once, where they are caught, with ``raise ... from exc``:
`os_error` turns an `OSError` into an `InputError` naming the file, and the store's connections
(``ipse.store._connections``) turn sqlite3 and psycopg errors into `StoreError`. Callers only
ever catch this tree. One kind of `OSError` can come from anywhere a path is looked at (a
``Path.exists()``, a ``mkdir``, sqlite opening a database): a path that cannot be reached, under
a folder the user may not search or past a file where a folder should be. `unreachable_path`
is its one translation, used by the CLI's handler: one line naming the path, exit 2, as an
unreadable file gets.
"""

from __future__ import annotations

from pathlib import Path


class IpseError(Exception):
    """Root of every error ipse raises on purpose."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(IpseError):
    """The caller asked for something that does not make sense (bad option, bad argument)."""


class InputError(IpseError):
    """Input that cannot be used: missing, unreadable, malformed, or of an unknown format.

    ``path`` names the file and ``position`` where in it (``line 12``, ``byte 3051``,
    ``message 4``), when known; both become part of the one-line message.
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, position: str | None = None
    ) -> None:
        self.path = str(path) if path is not None else None
        self.position = position
        where = ""
        if self.path is not None:
            where = self.path + (f":{position}" if position else "") + ": "
        elif position:
            where = f"{position}: "
        super().__init__(where + message)
        self.detail = message


class UnknownFormat(InputError):
    """The format of an input could not be detected or is not supported."""


class InvalidConversation(InputError):
    """A conversation breaks its provider's rules (orphan tool result, bad roles, ...)."""


class CutError(InputError):
    """The cut cannot be placed: out of range, or no checkpoint call to cut at."""


class NoStore(InputError):
    """A command that only reads was pointed at a store that does not exist or holds no ipse
    data; nothing was created."""


class PrefixEdit(UsageError):
    """An edit would rewrite history the cache already holds."""


class CheckFailed(IpseError):
    """A check ran and found a problem (verification, lint, canary). Exit code 1."""

    exit_code = 1


class StoreError(IpseError):
    """A storage backend failed or holds data it cannot use."""


BUSY = 75
"""The exit code of a write another writer was busy with (sysexits.h ``EX_TEMPFAIL``): nothing
was written and running the command again may succeed. Not 1, which says a check found a
problem."""


class ConnectionLost(StoreError):
    """The connection to the database failed while a statement was in flight (the server
    terminated it, restarted, or the network dropped it): a write may have been committed
    before the reply was lost. A caller that retries first reads back what it wrote."""


class WriterConflict(StoreError):
    """Another writer holds the lease for this twin; exit code 75 (`BUSY`)."""

    exit_code = BUSY


class StaleWriter(StoreError):
    """This writer's lease expired and was taken over; its write was refused. Exit code 75."""

    exit_code = BUSY


class MissingExtra(IpseError):
    """An optional part of ipse needs a package extra that is not installed."""

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(
            f"this needs the optional package {package!r}; install it with: "
            f"pip install 'ipse[{extra}]' (from ipse's source folder: pip install '.[{extra}]')"
        )
        self.extra = extra
        self.package = package


__all__ = [
    "BUSY",
    "CheckFailed",
    "ConnectionLost",
    "CutError",
    "InputError",
    "InvalidConversation",
    "IpseError",
    "MissingExtra",
    "NoStore",
    "PrefixEdit",
    "StaleWriter",
    "StoreError",
    "UnknownFormat",
    "UsageError",
    "WriterConflict",
]
