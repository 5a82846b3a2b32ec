"""The ``ipse`` entry point: the command group, lazy command loading, and the one error handler.

Commands live one group per module under ``ipse.cli`` and are imported only when invoked, so
``ipse --help`` stays fast. Errors are handled in one place, the group's `main`, so click's
``CliRunner`` sees exactly what the ``ipse`` executable does:

- an `IpseError` prints one line on stderr and exits with its class's code (1 or 2);
- click's own usage errors print one line naming ``ipse CMD --help`` and exit 2;
- anything else is a bug: one line, exit 3, the traceback only with ``IPSE_DEBUG=1``, so a crash
  is never mistaken for exit 1 ("a check found a problem");
- Ctrl-C exits 130; output cut short by a closed pipe ends quietly.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from ipse import __version__, _notes
from ipse._os_errors import unreachable_path
from ipse.cli import _lifetime as lifetime
from ipse.cli._entry import default_sigpipe, tolerant_output
from ipse.errors import IpseError

# command name -> "module:attribute"; each module owns one command or command group.
_COMMANDS: dict[str, str] = {
    "archive": "ipse.cli.archive:archive_group",
    "handoff": "ipse.cli.handoff:handoff_command",
    "inspect": "ipse.cli.inspect:inspect_command",
    "install": "ipse.cli.install:install_command",
    "lint": "ipse.cli.prefix:lint_command",
    "mcp": "ipse.cli.mcp:mcp_command",
    "micro-handoff": "ipse.cli.micro_handoff:micro_handoff_group",
    "prefix": "ipse.cli.prefix:prefix_command",
    "probe": "ipse.cli.probe:probe_command",
    "proxy": "ipse.cli.proxy:proxy_group",
    "report": "ipse.cli.report:report_command",
    "recall": "ipse.cli.archive:recall_command",
    "replay": "ipse.cli.replay:replay_command",
    "verify": "ipse.cli.verify:verify_command",
    "state": "ipse.cli.state:state_group",
    "twin": "ipse.cli.twin:twin_group",
    "uninstall": "ipse.cli.install:uninstall_command",
    "usage": "ipse.cli.usage:usage_group",
}


INTERNAL_ERROR = 3
"""Exit code of a bug: an exception that is not an `IpseError`."""

INTERRUPTED = 130


class _IpseGroup(click.Group):
    """The top group: commands imported on first use, every error handled in `main`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; in standalone mode every outcome becomes a message and an exit code."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except BaseException as exc:  # the one place every outcome is reported
            code = report_error(exc)
        else:
            code = result if isinstance(result, int) else 0
        sys.exit(code)


def report_error(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr and return the exit code it stands for."""
    if isinstance(exc, SystemExit):
        raise exc
    if isinstance(exc, IpseError):
        return _say(f"ipse: error: {exc}", exc.exit_code)
    if isinstance(exc, click.UsageError):
        see = f"see {exc.ctx.command_path} --help" if exc.ctx is not None else "see ipse --help"
        message = _one_line(exc.format_message()).rstrip(".")
        return _say(f"ipse: error: {message}; {see}", exc.exit_code)
    if isinstance(exc, click.ClickException):
        return _say(f"ipse: error: {_one_line(exc.format_message())}", exc.exit_code)
    if isinstance(exc, click.exceptions.Abort | KeyboardInterrupt):
        return _say("ipse: interrupted", INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        _quiet_closed_pipe()
        return 0
    if not isinstance(exc, Exception):
        raise exc
    unreachable = unreachable_path(exc)
    if unreachable is not None:  # a path the user named, under a folder they may not search
        return _say(f"ipse: error: {unreachable}", unreachable.exit_code)
    if os.environ.get("IPSE_DEBUG") == "1":
        import traceback  # (only here: a command that does not fail does not pay its import)

        traceback.print_exception(exc, file=sys.stderr)
    what = _one_line(str(exc))
    detail = f"{type(exc).__name__}: {what}" if what else type(exc).__name__
    return _say(
        f"ipse: internal error: {detail}; please report it (IPSE_DEBUG=1 shows the traceback)",
        INTERNAL_ERROR,
    )


def _say(line: str, code: int) -> int:
    click.echo(line, err=True)
    return code


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _quiet_closed_pipe() -> None:
    """Stop Python's own flush at exit from complaining about the pipe that closed."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@click.group(cls=_IpseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="ipse")
def cli() -> None:
    """ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

    Every command takes --help with examples; every command that reports takes --json.

    Exit codes: 0 ok, 1 a check found a problem, 2 bad input or usage, 3 a bug in ipse,
    75 busy (another writer holds a twin's lease: nothing written, run it again),
    130 interrupted.

    \b
    Examples:
      ipse inspect session.jsonl --messages        what a session is made of
      ipse handoff session.jsonl --at now -o out.json
      ipse prefix captured-requests/               where the prompt cache stopped hitting
      ipse replay session.jsonl                    what the autopilot would have saved
      ipse report session.jsonl --open             all of it on one offline page
      ipse proxy start                             hand off on the wire
      ipse install --agent claude-code             checkpoint and recall tools over MCP
      ipse usage --by week                         what every session cost, lost and saved
    """
    _notes_to_stderr()


def _notes_to_stderr() -> None:
    """The library's notes (``ipse`` loggers) as lines on the command's stderr."""
    _notes.to_stderr(_note_line)


def _note_line(line: str) -> None:
    click.echo(line, err=True)


# Commands that keep running (servers): everything else runs once and exits.
_SERVERS = frozenset({"proxy", "mcp"})


def entry() -> None:
    """The ``ipse`` executable: `main`, ending quietly when its output pipe closes."""
    default_sigpipe()
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command not in _SERVERS:
        # A command that runs once keeps what it read until it exits, and parsed JSON holds no
        # reference cycles: the cyclic collector would only walk a large input again and again
        # (about a tenth of a handoff's CPU). The servers keep it.
        gc.disable()
        tolerant_output()
        lifetime.arm()
        try:
            main()
        except SystemExit as exc:
            if exc.code is None or type(exc.code) is int:
                lifetime.finish(exc.code or 0)  # without freeing what the command built
            raise
    else:
        main()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with its code; errors are handled by the group (`_IpseGroup.main`)."""
    cli.main(args=argv, prog_name="ipse")


if __name__ == "__main__":  # pragma: no cover
    entry()
