"""Rendering helpers shared by the commands: one JSON document for ``--json``, rich otherwise,
and a progress bar that shows only on a terminal.

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
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import click

from ipse import jsonio
from ipse.redact import fingerprint

T = TypeVar("T")

__all__ = ["clean", "console", "emit_json", "fingerprint", "progress", "warn"]


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
    """Iterate with a progress bar on a terminal (stderr); silently when piped."""
    if not sys.stderr.isatty():
        yield from items
        return
    from rich.progress import track

    yield from track(items, description=label, total=total, console=console(stderr=True))


def warn(message: str) -> None:
    """One warning line on stderr."""
    click.echo(f"ipse: warning: {clean(message, one_line=True)}", err=True)
