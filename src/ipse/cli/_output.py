"""Rendering helpers shared by the commands: one JSON document for ``--json``, rich otherwise,
and a progress bar that shows only on a terminal, for work that takes more than a second, and
never with ``--json``.

What ipse prints is mostly data it did not write: tool names, arguments, facts, file names.
Such text is never read as rich markup (``[/]`` in a tool name would crash the renderer) and
never reaches the terminal with its control characters (an ``ESC[2J`` in a tool name would
clear the screen, an OSC sequence retitle the window): `console` returns a console with markup
off whose every string goes through `clean`, which writes control characters, bidirectional
overrides and lone surrogates as visible escapes. `warn` cleans its line the same way.
`fingerprint` (from `ipse.redact`) stands in for a value that may be a secret when a
diagnostic has to say that it changed without showing it.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from ipse import jsonio
from ipse import progress as ipse_progress
from ipse.redact import fingerprint

T = TypeVar("T")

__all__ = [
    "clean",
    "console",
    "emit_json",
    "fingerprint",
    "progress",
    "terminal_progress",
    "warn",
]


def emit_json(document: Any) -> None:
    """Print one JSON document to stdout (indented, keys in insertion order)."""
    data = jsonio.dumps(document, option=jsonio.OPT_INDENT_2 | jsonio.OPT_NON_STR_KEYS)
    click.echo(data.decode("utf-8"))


# C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates,
# and lone surrogates (which no terminal encoding can write).
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + r"\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, one_line: bool = False) -> str:
    """``text`` safe for a terminal: control characters (tab and newline kept unless
    ``one_line``) and bidi overrides become visible escapes such as ``\\x1b``."""
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, text)


_CONSOLE: Any = None


def _console_class() -> Any:
    global _CONSOLE
    if _CONSOLE is None:
        from rich.console import Console

        class DataConsole(Console):
            """A console that prints strings as text, never markup, with controls escaped."""

            def render_str(self, text: str, **kwargs: Any) -> Any:
                kwargs["markup"] = False
                kwargs["emoji"] = False
                return super().render_str(clean(text), **kwargs)

        _CONSOLE = DataConsole
    return _CONSOLE


PIPED_WIDTH = 10_000
"""The width human output is laid out in when it goes to a pipe or a file (and ``COLUMNS``
names none): wide enough that no line is wrapped for a reader that is not a terminal."""


def _width(stream: Any) -> int | None:
    """The real width of a terminal (rich asks it), ``COLUMNS`` when set, else no wrapping."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return None
    return PIPED_WIDTH


def console(stderr: bool = False) -> Any:
    """A rich console for human output: strings are data (no markup, controls escaped);
    style with ``style=`` or `rich.text.Text`, never with markup in the string. On a terminal
    it uses the terminal's width; piped, lines are not wrapped (``COLUMNS`` overrides both)."""
    stream = sys.stderr if stderr else sys.stdout
    return _console_class()(
        stderr=stderr, highlight=False, markup=False, emoji=False, width=_width(stream)
    )


def progress(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Iterate, reporting progress to the bar of `terminal_progress` (if one is shown)."""
    return ipse_progress.track(items, label, total)


class _DelayedBar:
    """A rich progress bar on stderr that appears only once the work has taken ``delay``
    seconds (short work shows nothing), one line per label, removed when done."""

    def __init__(self, delay: float) -> None:
        self._start = time.monotonic()
        self._delay = delay
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}

    def update(self, label: str, done: float, total: float | None) -> None:
        if self._bar is None:
            if time.monotonic() - self._start < self._delay:
                return
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                console=console(stderr=True),
                transient=True,
            )
            self._bar.start()
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._bar.add_task(clean(label, one_line=True))
        self._bar.update(task, completed=done, total=total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


@contextmanager
def terminal_progress(quiet: bool = False, delay: float = 1.0) -> Iterator[None]:
    """Show the library's progress on stderr while the block runs, when stderr is a terminal,
    ``quiet`` is false (``--json``) and the work takes more than ``delay`` seconds."""
    if quiet or not sys.stderr.isatty():
        with ipse_progress.reporting(None):
            yield
        return
    bar = _DelayedBar(delay)
    try:
        with ipse_progress.reporting(bar):
            yield
    finally:
        bar.close()


def warn(message: str) -> None:
    """One warning line on stderr."""
    click.echo(f"ipse: warning: {clean(message, one_line=True)}", err=True)
