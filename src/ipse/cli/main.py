"""The ``ipse`` entry point: the command group, lazy command loading, and the one error handler.

Commands live one group per module under ``ipse.cli`` and are imported only when invoked, so
``ipse --help`` stays fast. Every `IpseError` is printed as one line on stderr and turned into its
exit code; click's own usage errors exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any

import click

from ipse import __version__
from ipse.errors import IpseError

# command name -> "module:attribute"; each module owns one command or command group.
_COMMANDS: dict[str, str] = {
    "archive": "ipse.cli.archive:archive_group",
    "handoff": "ipse.cli.handoff:handoff_command",
    "inspect": "ipse.cli.inspect:inspect_command",
    "lint": "ipse.cli.prefix:lint_command",
    "prefix": "ipse.cli.prefix:prefix_command",
    "report": "ipse.cli.report:report_command",
    "recall": "ipse.cli.archive:recall_command",
    "verify": "ipse.cli.verify:verify_command",
    "state": "ipse.cli.state:state_group",
    "twin": "ipse.cli.twin:twin_group",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="ipse")
def cli() -> None:
    """ipse keeps an AI agent itself across context resets, and makes each reset cheaper.

    \b
    Examples:
      ipse inspect session.jsonl
      ipse inspect request.json --json
    """


def entry() -> None:
    """The ``ipse`` executable: `main`, ending quietly when its output pipe closes."""
    if hasattr(signal, "SIGPIPE"):
        # Output piped into `head` and cut short: stop quietly, as other command-line tools do
        # (click would report it as exit code 1, which here means "a check found a problem").
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; translate every `IpseError` into a one-line message and its exit code."""
    try:
        result: Any = cli.main(args=argv, prog_name="ipse", standalone_mode=False)
    except IpseError as exc:
        click.echo(f"ipse: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("ipse: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("ipse: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    code = result if isinstance(result, int) else 0
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
