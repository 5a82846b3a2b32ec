"""``ipse handoff FILE`` without the command-line framework, and without rich when stdout is not
a terminal.

A handoff of a session of a few megabytes is a read, a strip and a write; importing click and
building the command tree, and rich's console and table, cost as much as the strip itself.
`fast_entry` answers the usual command lines (FILE with ``-o FILE`` or ``--json``, and any of
``--at``, ``--budget``, ``--ledger-tokens``, ``--format``, ``--model``, ``--max-tokens``,
``--checkpoint-tool``, ``--session``, ``--store``, ``--thread``, ``--no-archive``,
``--keep-blocks``, ``--promote-thinking``, ``--breadcrumbs``, each at most once) with the very
function the click command runs (`ipse.cli._handoff_run.hand_off_file`); anything else
(``--to``, ``-o -``, ``--help``, a value it does not take, a repeated option) goes to the full
command line, which parses, runs and reports as always. An error is reported as the full
command line reports it: one line and its exit code. Measured with ``bench/startup.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_FLAGS = {
    "--json": "as_json",
    "--no-archive": "no_archive",
    "--keep-blocks": "keep_blocks",
    "--promote-thinking": "promote_thinking",
    "--breadcrumbs": "breadcrumbs",
}
_VALUED = {
    "-o": "output",
    "--output": "output",
    "--at": "at",
    "--format": "fmt",
    "--model": "model",
    "--max-tokens": "max_tokens",
    "--budget": "budget",
    "--ledger-tokens": "ledger_tokens",
    "--checkpoint-tool": "checkpoint_tool",
    "--session": "session",
    "--store": "store",
    "--thread": "thread",
}
_COUNTS = {"max_tokens": 1, "budget": 1, "ledger_tokens": 0}  # the least each may be


def options(argv: Sequence[str]) -> dict[str, Any] | None:
    """The arguments of ``hand_off_file`` for ``argv`` (what follows ``handoff``), or None when
    the full command line should read it."""
    given: dict[str, Any] = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-") or arg == "-":
            if "file" in given or not arg:
                return None
            given["file"] = arg
            continue
        name, equals, value = arg.partition("=")
        key = _FLAGS.get(name) or _VALUED.get(name)
        if key is None or key in given or (name in _FLAGS and equals):
            return None
        if name in _FLAGS:
            given[key] = True
            continue
        if not equals:
            if not rest or (rest[0].startswith("-") and rest[0] != "-"):
                return None
            value = rest.pop(0)
        given[key] = value
    return _checked(given)


def _checked(given: dict[str, Any]) -> dict[str, Any] | None:
    """The options as `Arguments` takes them; None when one is not a value the click command
    takes as it is, or the line is one the fast path leaves to it."""
    from ipse.transcript import FORMATS

    if "file" not in given or not (given.get("output") or given.get("as_json")):
        return None  # (no -o: where the body goes depends on the terminal; the full line knows)
    if given.get("output") == "-" or given.get("fmt", FORMATS[0]) not in FORMATS:
        return None
    for key, least in _COUNTS.items():
        if key in given:
            text = str(given[key])
            if not (text.isascii() and text.isdigit()) or int(text) < least:
                return None
            given[key] = int(text)
    given["file"] = Path(given["file"])
    if "output" in given:
        given["output"] = Path(given["output"])
    return given


def fast_entry(argv: Sequence[str]) -> bool:
    """Run ``ipse handoff`` with ``argv`` and end the process; False (nothing printed) when the
    full command line should run it."""
    given = options(argv)
    if given is None:
        return False
    from ipse import _notes
    from ipse.cli import _lifetime as lifetime
    from ipse.cli._entry import default_sigpipe, tolerant_output
    from ipse.cli._handoff_run import Arguments, Printing, hand_off_file

    default_sigpipe()
    import gc

    gc.disable()  # (as the full command line does for a command that runs once)
    tolerant_output()
    lifetime.arm()
    _notes.to_stderr(_error_line)
    printing = Printing(console=_console, emit_json=_emit_json, warn=_warn, echo=_echo)
    try:
        hand_off_file(Arguments(**given), printing)
    except BaseException as exc:
        lifetime.finish(_reported(exc))
    lifetime.finish(0)


def _reported(exc: BaseException) -> int:
    """``exc`` on stderr as the full command line reports it; its exit code."""
    from ipse.errors import IpseError

    if isinstance(exc, IpseError):
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


def _echo(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _warn(message: str) -> None:
    """`ipse.cli._output.warn` without click (the line is cleaned of every control character)."""
    from ipse.cli._output import clean

    _error_line(f"ipse: warning: {clean(message, one_line=True)}")


def _console(stderr: bool) -> Any:
    """The console of the human report: a plain one on a pipe (`ipse.cli._fast_prefix`), where
    that prints the same bytes as rich, else rich's."""
    from ipse.cli._fast_prefix import _console as plain_or_rich
    from ipse.cli._output import console

    return console(stderr=True) if stderr else plain_or_rich()


__all__ = ["fast_entry", "options"]
