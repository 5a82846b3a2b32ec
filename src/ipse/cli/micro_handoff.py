"""``ipse micro-handoff``: what an agent needs to take part in a handoff (the ``micro_handoff``
tool's definition, the narration system-prompt section) and the text its notes leave behind.

These print and exit; none of them reads a session or writes anything. They used to be options
of ``ipse handoff`` (``--print-tool``, ``--print-prompt``, ``--render-notes``), which still work
there as hidden aliases with a one-line notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ipse.cli._output import emit_json
from ipse.errors import InputError
from ipse.handoff import render_notes, tool_definition
from ipse.handoff._shared import narration_prompt

SHAPES = ("anthropic", "openai-chat", "openai-responses")
"""The request dialects the tool definition can be printed in."""


@click.group("micro-handoff")
def micro_handoff_group() -> None:
    """The micro_handoff tool an agent calls at a checkpoint: its definition, the prompt
    section that makes the agent narrate, and how its notes read once the calls are gone.

    \b
    Examples:
      ipse micro-handoff tool openai-responses
      ipse micro-handoff prompt >> system-prompt.md
      ipse micro-handoff render-notes notes.json
    """


@micro_handoff_group.command("tool")
@click.argument("shape", type=click.Choice(SHAPES), default="anthropic")
def tool_command(shape: str) -> None:
    """Print the micro_handoff tool definition as a SHAPE request lists it (JSON).

    \b
    Examples:
      ipse micro-handoff tool                       the Anthropic Messages shape
      ipse micro-handoff tool openai-chat > micro_handoff.json
    """
    print_tool(shape)


@micro_handoff_group.command("prompt")
def prompt_command() -> None:
    """Print the system-prompt section that makes an agent narrate its work (what stays).

    \b
    Example:
      ipse micro-handoff prompt >> system-prompt.md
    """
    print_prompt()


@micro_handoff_group.command("render-notes")
@click.argument("notes_file", metavar="FILE", type=click.Path(path_type=Path))
def render_notes_command(notes_file: Path) -> None:
    """Render a micro_handoff notes JSON FILE as the text that stays after a handoff.

    \b
    Example:
      echo '{"done": ["parser reads 12.5 MB/s"], "open": ["the tokenizer"]}' > notes.json
      ipse micro-handoff render-notes notes.json
    """
    print_notes(notes_file)


def print_tool(shape: str) -> None:
    """The tool definition in ``shape``, as one JSON document on stdout."""
    emit_json(tool_definition(shape))


def print_prompt() -> None:
    """The narration system-prompt section on stdout, as is."""
    click.echo(narration_prompt(), nl=False)


def print_notes(notes_file: Path) -> None:
    """The notes in ``notes_file`` rendered as the text that stays; bad notes name the file."""
    from ipse.fileio import read_bytes
    from ipse.transcript._shared import parse_json

    notes: Any = parse_json(read_bytes(notes_file), notes_file)
    try:
        click.echo(render_notes(notes))
    except InputError as exc:
        raise InputError(exc.detail, path=notes_file) from exc
