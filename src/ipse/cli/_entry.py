"""The ``ipse`` executable's first step: the SessionStart hook without the command-line framework.

``ipse state resume --hook claude-code`` runs at every session start and after every compaction,
so its cost is paid over and over; importing click and building the command tree costs more than
the work. This module answers that exact command line (``--hook claude-code`` and ``--dir``, in
any order, ``--opt=value`` too) from the library alone. Anything else, and every error, goes to
the full command line in `ipse.cli.main`, which then parses, runs and reports as always, so a
fast answer and a slow one are the same answer. ``ipse usage statusline`` (exactly that: Claude
Code runs it after every message) answers here too, from the library alone.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

_HOOKS = ("claude-code",)


def entry() -> None:
    """The ``ipse`` executable: the hook's fast path, else `ipse.cli.main.entry`."""
    if _hook_resume(sys.argv[1:]):
        return
    if sys.argv[1:2] == ["mcp"]:  # the stdio MCP server, answering before a harness talks
        from ipse.mcp._stdio import fast_entry

        if fast_entry(sys.argv[2:]):
            return
    if sys.argv[1:] == ["usage", "statusline"]:  # run by Claude Code after every message
        default_sigpipe()
        from ipse.usage import statusline

        sys.stdout.write(statusline(sys.stdin.buffer.read()) + "\n")
        return
    if sys.argv[1:2] == ["prefix"]:  # the replay of one log, without click (and rich, piped)
        from ipse.cli._fast_prefix import fast_entry as fast_prefix

        if fast_prefix(sys.argv[2:]):
            return
    if sys.argv[1:2] == ["handoff"]:  # one handoff, without click (and rich, piped)
        from ipse.cli._fast_handoff import fast_entry as fast_handoff

        if fast_handoff(sys.argv[2:]):
            return
    from ipse.cli.main import entry as full

    full()


def hook_folder(argv: list[str]) -> Path | None:
    """The state folder when ``argv`` is exactly a ``state resume --hook`` call, else None."""
    if argv[:2] != ["state", "resume"]:
        return None
    options: dict[str, str] = {}
    rest = argv[2:]
    while rest:
        name, _, value = rest[0].partition("=")
        if name not in ("--hook", "--dir") or name in options:
            return None
        if not value:
            if len(rest) < 2 or rest[1].startswith("-"):
                return None
            value, rest = rest[1], rest[2:]
        else:
            rest = rest[1:]
        options[name] = value
    if options.get("--hook") not in _HOOKS:
        return None
    folder = options.get("--dir")
    if folder is None:
        env = os.environ.get("IPSE_STATE_DIR")
        if env == "":
            return None
        folder = env or "state"
    return Path(folder)


def _hook_resume(argv: list[str]) -> bool:
    folder = hook_folder(argv)
    if folder is None or (folder.exists() and not folder.is_dir()):
        return False  # the full command line reports a file given as --dir
    default_sigpipe()
    if not folder.is_dir():
        return True  # no state folder: a hook prints nothing
    from ipse.errors import IpseError
    from ipse.statedir import resume
    from ipse.statedir._shared import hook_json

    try:
        text = hook_json(resume(folder).text(None, None))
    except IpseError:
        return False  # the full command line reports it, as one line with its exit code
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return True


def default_sigpipe() -> None:
    """Output piped into `head` and cut short: stop quietly, as other command-line tools do
    (click would report it as exit code 1, which here means "a check found a problem")."""
    try:  # (the C module: `signal` builds enums when imported, a millisecond of the start)
        import _signal as signals  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover (every CPython has it)
        import signal as signals
    if hasattr(signals, "SIGPIPE"):
        signals.signal(signals.SIGPIPE, signals.SIG_DFL)


def tolerant_output() -> None:
    """Write what the terminal's encoding cannot hold as escapes rather than fail: under a
    Latin-1 locale a tool name in Japanese would end the command with a traceback. (Not for
    the servers, whose stdout may carry a protocol.)"""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


__all__ = ["default_sigpipe", "entry", "hook_folder", "tolerant_output"]
