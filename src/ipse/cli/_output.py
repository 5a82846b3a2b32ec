"""Rendering helpers shared by the commands: one JSON document for ``--json``, rich otherwise
(`print_table` draws tables of thousands of rows itself, in rich's box), and a progress bar
that shows only on a terminal, for work that takes more than a second, and never with
``--json``.

What ipse prints is mostly data it did not write: tool names, arguments, facts, file names.
Such text is never read as rich markup (``[/]`` in a tool name would crash the renderer) and
never reaches the terminal with its control characters (an ``ESC[2J`` in a tool name would
clear the screen, an OSC sequence retitle the window): `console` returns a console with markup
off whose every string goes through `clean`, which writes control characters, bidirectional
overrides and lone surrogates as visible escapes. `warn` cleans its line the same way.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ipse import _progress as ipse_progress
from ipse import jsonio

T = TypeVar("T")

__all__ = [
    "clean",
    "console",
    "emit_json",
    "print_table",
    "progress",
    "terminal_progress",
    "warn",
]


def emit_json(document: Any) -> None:
    """Print one JSON document to stdout (indented, keys in insertion order)."""
    import click  # (on use: `ipse prefix`'s fast path prints through this module without it)

    data = jsonio.dumps(document, option=jsonio.OPT_INDENT_2 | jsonio.OPT_NON_STR_KEYS)
    click.echo(data.decode("utf-8"))


# C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates,
# and lone surrogates (which no terminal encoding can write).
_UNSAFE = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"


@functools.cache
def _unsafe(one_line: bool) -> re.Pattern[str]:
    """The pattern of what `clean` escapes, compiled on first use: compiling the two took 9
    million instructions (about 2.5 ms) of every start of ``ipse prefix``, whose plain output
    cleans nothing (measured under valgrind's cachegrind)."""
    return re.compile(_UNSAFE[:-1] + r"\t\n]" if one_line else _UNSAFE)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, one_line: bool = False) -> str:
    """``text`` safe for a terminal: control characters (tab and newline kept unless
    ``one_line``) and bidi overrides become visible escapes such as ``\\x1b``."""
    return _unsafe(one_line).sub(_escape, text)


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
    """The real width of a terminal (rich asks it), ``COLUMNS`` when set (to a width: ``0``,
    which some environments export, would print nothing), else no wrapping."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
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


LONG_TABLE_ROWS = 200
"""Tables with more rows than this are laid out by `print_table` itself rather than by rich,
which measures and renders every cell through its segment pipeline (about half a millisecond a
row: the human output of ``prefix`` on a 250 MB session took longer than its analysis)."""

_ELLIPSIS = "\u2026"


def print_table(
    out: Any,
    title: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[str]],
) -> None:
    """Print a table on ``out`` (a `console`): ``columns`` as (name, ``left`` | ``right``),
    ``rows`` as cell strings (data, cleaned like everything `console` prints).

    Up to `LONG_TABLE_ROWS` rows it is a rich ``Table``. A longer one is drawn directly in the
    same box, one line per row (line breaks in a cell are shown as escapes); when the console is
    narrower than the table, the widest left-justified columns are cut to fit, their cells
    ending in an ellipsis, and when even that cannot make it fit, rich lays it out."""
    if len(rows) > LONG_TABLE_ROWS and _print_long_table(out, title, columns, rows):
        return
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    out.print(table)


def _print_long_table(
    out: Any, title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]
) -> bool:
    """`print_table`'s direct drawing; False (nothing printed) when it cannot fit, or when
    the console's encoding has no box-drawing characters (rich then draws in ASCII)."""
    if out.options.ascii_only:
        return False
    from rich.cells import cell_len, set_cell_size
    from rich.text import Text

    heads = [clean(name, one_line=True) for name, _ in columns]
    cells = [[clean(cell, one_line=True) for cell in row] for row in rows]
    widths = [cell_len(head) for head in heads]
    for row in cells:
        for i, cell in enumerate(row):
            length = cell_len(cell)
            if length > widths[i]:
                widths[i] = length
    if not _fit(widths, [justify for _, justify in columns], out.width):
        return False
    right = [justify == "right" for _, justify in columns]

    def line(values: Sequence[str], bar: str) -> str:
        parts = []
        for value, width, flush_right in zip(values, widths, right, strict=True):
            if flush_right:
                value = value.rstrip()  # as rich justifies: trailing space does not count
            size = cell_len(value)
            if size > width:
                value, size = set_cell_size(value, width - 1) + _ELLIPSIS, width
            pad = " " * (width - size)
            parts.append(f" {pad}{value} " if flush_right else f" {value}{pad} ")
        return bar + bar.join(parts) + bar

    total = sum(widths) + 3 * len(widths) + 1
    out.print(Text(clean(title)), width=total, justify="left")
    lines = [
        "\u250f" + "\u2533".join("\u2501" * (w + 2) for w in widths) + "\u2513",
        line(heads, "\u2503"),
        "\u2521" + "\u2547".join("\u2501" * (w + 2) for w in widths) + "\u2529",
        *(line(row, "\u2502") for row in cells),
        "\u2514" + "\u2534".join("\u2500" * (w + 2) for w in widths) + "\u2518",
    ]
    out.file.write("\n".join(lines) + "\n")
    out.file.flush()
    return True


def _fit(widths: list[int], justify: Sequence[str], room: int) -> bool:
    """Narrow the widest left-justified columns (not below 8 cells) until the table fits in
    ``room`` cells; False when it cannot."""
    while sum(widths) + 3 * len(widths) + 1 > room:
        flexible = [i for i, j in enumerate(justify) if j != "right" and widths[i] > 8]
        if not flexible:
            return False
        widest = max(flexible, key=lambda i: widths[i])
        excess = sum(widths) + 3 * len(widths) + 1 - room
        widths[widest] = max(8, widths[widest] - excess)
    return True


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
    import click

    click.echo(f"ipse: warning: {clean(message, one_line=True)}", err=True)
