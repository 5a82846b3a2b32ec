"""``ipse prefix LOG`` without the command-line framework, and without rich when stdout is not
a terminal.

Most of what ``ipse prefix`` on a session of a few megabytes cost was starting: click and the
command tree (about 17 ms), rich's console and table (about 30 ms), and the modules of the
linter, the assembler and the watcher the replay never uses. `fast_entry` answers the usual
command lines (LOG with ``--json``, ``--show-values``, ``--provider``, ``--format``,
``--tokenizer``, ``--min-tokens``, ``--fail-over``, each at most once) with the very functions
the click command runs (`ipse.cli._replay`); anything else (``--watch``, ``--help``, a value it
does not know, a repeated option), and any error while reading or replaying, goes to the full
command line, which then parses, runs and reports as always. Measured with
``bench/prefix_others.py`` (compiled bytecode, least of 5): about 70 ms down to about 40 ms a
session (see the docs' numbers for each file).

When stdout is not a terminal, `PlainConsole` prints the text: a line of printable ASCII as it
is, and the table drawn in rich's box; a line or a cell it is not sure of (another character, a
tab, a line wider than the console), and every line when an environment variable tells rich to
colour or a terminal asks for its width, goes through rich, so the bytes are rich's either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ipse.cli import _replay as replaying
from ipse.cli._output import _width, console, terminal_progress

_FLAGS = ("--json", "--show-values")
_VALUED = ("--format", "--provider", "--tokenizer", "--min-tokens", "--fail-over")
_TOKENIZERS = ("auto", "o200k", "bytes")
# Variables with which rich colours, or lays out, what goes to a pipe: then rich prints.
_RICH_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def options(argv: Sequence[str]) -> dict[str, Any] | None:
    """The click command's arguments for ``argv`` (what follows ``prefix``), or None when the
    full command line should read it."""
    given: dict[str, str | bool] = {}
    log: str | None = None
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            if log is not None or not arg:
                return None
            log = arg
            continue
        name, equals, value = arg.partition("=")
        if name in given or name not in (*_FLAGS, *_VALUED) or (name in _FLAGS and equals):
            return None
        if name in _FLAGS:
            given[name] = True
            continue
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        given[name] = value
    return _checked(log, given)


def _checked(log: str | None, given: dict[str, str | bool]) -> dict[str, Any] | None:
    """The options as the click command gets them, None when one is not a value it takes."""
    from pathlib import Path

    from ipse.prefix._shared import MIN_TOKENS, PROVIDERS
    from ipse.transcript import FORMATS

    fmt, provider = given.get("--format"), given.get("--provider")
    tokenizer, min_tokens = given.get("--tokenizer", "auto"), given.get("--min-tokens")
    if log is None or (fmt is not None and fmt not in FORMATS):
        return None
    if (provider is not None and provider not in PROVIDERS) or tokenizer not in _TOKENIZERS:
        return None
    if min_tokens is not None and not (str(min_tokens).isascii() and str(min_tokens).isdigit()):
        return None
    fail_over = given.get("--fail-over")
    try:
        limit = replaying.limit(str(fail_over)) if fail_over is not None else None
    except Exception:  # (a bad limit: the full command line says what is wrong)
        return None
    return {
        "log": Path(log),
        "fmt": fmt,
        "provider": provider,
        "tokenizer": tokenizer,
        "min_tokens": MIN_TOKENS if min_tokens is None else int(min_tokens),
        "limit": limit,
        "show_values": "--show-values" in given,
        "as_json": "--json" in given,
    }


def fast_entry(argv: Sequence[str]) -> bool:
    """Run ``ipse prefix`` with ``argv`` and end the process; False (nothing printed) when the
    full command line should run it."""
    given = options(argv)
    if given is None:
        return False
    from ipse import _notes
    from ipse.cli import _lifetime as lifetime
    from ipse.cli._entry import default_sigpipe, tolerant_output

    default_sigpipe()
    import gc

    gc.disable()  # (as the full command line does for a command that runs once)
    tolerant_output()
    lifetime.arm()
    _notes.to_stderr(_error_line)
    try:
        with terminal_progress(quiet=given["as_json"]):
            read = replaying.replay(
                given["log"],
                given["fmt"],
                given["provider"],
                given["tokenizer"],
                given["min_tokens"],
            )
    except Exception:
        return False  # the full command line reads it again and reports what is wrong
    except BaseException as exc:  # (Ctrl-C)
        lifetime.finish(_reported(exc))
    lifetime.keep(read)
    try:
        replaying.show(
            read[1],
            given["show_values"],
            given["as_json"],
            given["limit"],
            _console,
            _emit_json,
            _warn,
        )
    except BaseException as exc:
        lifetime.finish(_reported(exc))
    lifetime.finish(0)


def _reported(exc: BaseException) -> int:
    """``exc`` on stderr as the full command line reports it; its exit code."""
    from ipse.errors import IpseError

    if isinstance(exc, IpseError):  # (--fail-over's gate)
        _error_line(f"ipse: error: {exc}")
        return exc.exit_code
    from ipse.cli.main import report_error  # (a bug, Ctrl-C, a closed pipe: rare)

    return report_error(exc)


def _error_line(line: str) -> None:
    """One line on stderr, as ``click.echo(line, err=True)`` writes it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _emit_json(document: Any) -> None:
    """`ipse.cli._output.emit_json` without click: orjson writes no control character raw, so
    there is no terminal escape for click's ``echo`` to remove."""
    from ipse import jsonio

    data = jsonio.dumps(document, option=jsonio.OPT_INDENT_2 | jsonio.OPT_NON_STR_KEYS)
    sys.stdout.write(data.decode("utf-8") + "\n")
    sys.stdout.flush()


def _warn(message: str) -> None:
    """`ipse.cli._output.warn` without click (the line is cleaned of every control character)."""
    from ipse.cli._output import clean

    _error_line(f"ipse: warning: {clean(message, one_line=True)}")


def _console() -> Any:
    """A `PlainConsole` when stdout is not a terminal and nothing tells rich to colour, else
    rich's console (`ipse.cli._output.console`)."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", None) or "").lower()
    isatty = getattr(stream, "isatty", None)
    if (isatty is None or isatty()) or not encoding.startswith("utf"):
        return console()
    if any(name in os.environ for name in _RICH_ENVIRONMENT):
        return console()
    width = _width(stream)
    return console() if width is None else PlainConsole(width)


def _plain(text: str) -> bool:
    """Printable ASCII: one cell a character, nothing rich would change."""
    return text.isascii() and text.isprintable()


class PlainConsole:
    """What `ipse.cli._output.console` prints for lines of printable ASCII narrower than the
    console, and for tables of such cells that fit, written directly; anything else goes
    through rich's console.

    Measured on ``ipse prefix`` piped: about 30 ms of a 70 ms run was importing rich's console
    and table, which this console does not import for the lines it writes itself."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._rich: Any = None

    def _fallback(self) -> Any:
        if self._rich is None:
            self._rich = console()
        return self._rich

    def print(self, text: Any, **options: Any) -> None:
        """``rich.console.Console.print`` for one string (``markup`` is off either way)."""
        plain = set(options) <= {"markup"} and isinstance(text, str) and _plain(text)
        if plain and len(text) < self.width and text == text.rstrip():
            sys.stdout.write(text + "\n")
            return
        self._fallback().print(text, **options)

    def table(
        self, title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]
    ) -> None:
        """`ipse.cli._output.print_table` on this console."""
        lines = _box(title, columns, rows)
        if lines is None or any(len(line) >= self.width for line in lines):
            from ipse.cli._output import print_table

            print_table(self._fallback(), title, columns, rows)
            return
        sys.stdout.write("\n".join(lines) + "\n")


def _box(
    title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]
) -> list[str] | None:
    """The lines of rich's table (heavy head box, a space of padding, the title over it
    justified left), or None when a cell or the title is not one it draws the same."""
    heads = [name for name, _ in columns]
    cells = [heads, *rows]
    if not rows or not all(_plain(c) and c == c.strip() for row in cells for c in row):
        return None
    widths = [max(len(row[i]) for row in cells) for i in range(len(heads))]
    total = sum(widths) + 3 * len(widths) + 1
    if not title or not _plain(title) or title != title.strip() or len(title) > total:
        return None
    right = [justify == "right" for _, justify in columns]

    def line(values: Sequence[str], bar: str) -> str:
        return (
            bar
            + bar.join(
                f" {v.rjust(w) if r else v.ljust(w)} "
                for v, w, r in zip(values, widths, right, strict=True)
            )
            + bar
        )

    return [
        title.ljust(total),
        "\u250f" + "\u2533".join("\u2501" * (w + 2) for w in widths) + "\u2513",
        line(heads, "\u2503"),
        "\u2521" + "\u2547".join("\u2501" * (w + 2) for w in widths) + "\u2529",
        *(line(row, "\u2502") for row in rows),
        "\u2514" + "\u2534".join("\u2500" * (w + 2) for w in widths) + "\u2518",
    ]


__all__ = ["PlainConsole", "fast_entry", "options"]
