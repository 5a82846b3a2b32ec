"""``ipse handoff``: strip a session at a checkpoint, prove nothing authored was lost, archive
the rest, and print the before/after measurement. The options are parsed here; the work is
`ipse.cli._handoff_run`'s, which the executable's fast path (`ipse.cli._fast_handoff`) calls
too."""

from __future__ import annotations

from pathlib import Path

import click

from ipse.cli._handoff_run import Arguments, Printing, hand_off_file
from ipse.cli._output import console, emit_json, warn
from ipse.cli.micro_handoff import SHAPES
from ipse.errors import UsageError
from ipse.handoff._shared import CHECKPOINT_TOOL, DEFAULT_LEDGER_TOKENS
from ipse.transcript import FORMATS


@click.command("handoff")
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Write the stripped request body here ('-' for stdout; the report then goes to stderr); "
    "a new file is private (0600), an existing one keeps its mode. "
    "Without -o the body goes to stdout when stdout is not a terminal; on a terminal, or with "
    "--json, nothing is written or archived (a dry run that shows the measurement).",
)
@click.option(
    "--to",
    "target",
    type=click.Choice(["body", "claude-code"]),
    default="body",
    show_default=True,
    help="body: a request body (see -o). claude-code: a new Claude Code session in the project "
    "folder of --cwd, ready for `claude --resume ID` (the input file is never touched).",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --to claude-code: the project the session belongs to (default: the current one).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=8192,
    show_default=True,
    help="max_tokens for a written Anthropic body whose input has none (a Claude Code session "
    "records none, and the API requires it).",
)
@click.option(
    "--model",
    help="The model of the written body, for inputs that record none (a trajectory without "
    "its config) or to replace the recorded one.",
)
@click.option(
    "--at",
    default="checkpoint",
    show_default=True,
    help="Where to cut: checkpoint (after the last micro_handoff result), now (all but an "
    "unfinished tool exchange at the end), end (every message), a message index, or best (the "
    "turn boundary where a handoff saves most, discounted by the demanded facts it loses: "
    "see `ipse probe`).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Name the input format.")
@click.option("--thread", help="A Claude Code thread other than the main one.")
@click.option(
    "--checkpoint-tool",
    default=CHECKPOINT_TOOL,
    show_default=True,
    help="The checkpoint tool's name (also found as mcp__SERVER__NAME, in an MCP namespace, or "
    "called through Codex's exec tool).",
)
@click.option("--keep-blocks", is_flag=True, help="Keep neighbouring text blocks separate.")
@click.option(
    "--promote-thinking", is_flag=True, help="Keep the text of thinking blocks as agent text."
)
@click.option(
    "--breadcrumbs",
    is_flag=True,
    help="Leave one short line per removed call (its tool, argument and recall id).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    help="Hold the rewritten part to this many tokens: the oldest agent narration goes to the "
    "archive as one recallable item, as little as it takes; the human's words, the notes and "
    "the ledger stay. Default: no budget (every authored word stays in the context).",
)
@click.option(
    "--ledger-tokens",
    type=click.IntRange(min=0),
    default=DEFAULT_LEDGER_TOKENS,
    show_default=True,
    help="The token cap of the ledger the marker at the cut carries (files changed and read, "
    "commands, failures, each with its recall id; newest first).",
)
@click.option("--no-archive", is_flag=True, help="Do not archive the removed blocks.")
@click.option("--store", help="Store URL (default: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME).")
@click.option("--session", help="Archive under this session id (default: the session's own).")
# Deprecated: these print and exit, they are not handoffs (now `ipse micro-handoff ...`).
@click.option("--print-prompt", is_flag=True, hidden=True)
@click.option(
    "--print-tool",
    type=click.Choice(SHAPES),
    is_flag=False,
    flag_value="anthropic",
    hidden=True,
)
@click.option("--render-notes", "notes_file", type=click.Path(path_type=Path), hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def handoff_command(
    file: Path | None,
    output: Path | None,
    target: str,
    cwd: Path | None,
    max_tokens: int,
    model: str | None,
    at: str,
    fmt: str | None,
    thread: str | None,
    checkpoint_tool: str,
    keep_blocks: bool,
    promote_thinking: bool,
    breadcrumbs: bool,
    budget: int | None,
    ledger_tokens: int,
    no_archive: bool,
    store: str | None,
    session: str | None,
    print_prompt: bool,
    print_tool: str | None,
    notes_file: Path | None,
    as_json: bool,
) -> None:
    """Strip tool calls, tool results and thinking before a checkpoint; keep every authored word.

    FILE is an Anthropic, OpenAI chat or Responses request body, a Claude Code session or a
    Cline / Roo Code history (written out as an Anthropic body), a Codex rollout (a Responses
    body), or a SWE-agent / mini-swe-agent trajectory (a Chat Completions body; --model names
    the model where it records none). OpenHands and Gemini CLI files are read only. The
    removed blocks go to the archive (see `ipse recall`); one marker at the cut says what was
    removed, how to recall it, and carries a ledger of it (files changed and read, commands and
    how they ended, what last failed, each with its recall id); the table shows the
    conversation before and after. Bad input: exit 2, no output, nothing archived.
    The default cut is the agent's last call of the checkpoint tool; a session without one
    needs --at now, --at end or --at N (`ipse inspect FILE --messages` lists the message indices).

    \b
    Examples:
      ipse handoff ~/.claude/projects/p/4d5611e5.jsonl --at now -o out.json
      ipse handoff request.json -o stripped.json --json
      ipse handoff ~/.claude/projects/p/4d5611e5.jsonl --at now --to claude-code
      ipse handoff trajectory.json --at 40 --breadcrumbs --no-archive
      ipse handoff session.jsonl --at now --budget 4000 -o out.json
      ipse handoff session.jsonl --at now --json | jq .ledger.text
    """
    if _print_only(print_prompt, print_tool, notes_file):
        return
    if file is None:
        raise UsageError("missing FILE (see ipse handoff --help)")
    arguments = Arguments(
        file=file,
        output=output,
        target=target,
        cwd=cwd,
        max_tokens=max_tokens,
        model=model,
        at=at,
        fmt=fmt,
        thread=thread,
        checkpoint_tool=checkpoint_tool,
        keep_blocks=keep_blocks,
        promote_thinking=promote_thinking,
        breadcrumbs=breadcrumbs,
        budget=budget,
        ledger_tokens=ledger_tokens,
        no_archive=no_archive,
        store=store,
        session=session,
        as_json=as_json,
    )
    hand_off_file(arguments, PRINTING)


PRINTING = Printing(
    console=lambda stderr: console(stderr=stderr),
    emit_json=emit_json,
    warn=warn,
    echo=lambda text: click.echo(text),
)


def _print_only(prompt: bool, tool: str | None, notes_file: Path | None) -> bool:
    """The deprecated print-and-exit options: each still prints what it did, after a notice
    naming the command that replaces it."""
    from ipse.cli import micro_handoff

    if prompt:
        _deprecated("--print-prompt", "ipse micro-handoff prompt")
        micro_handoff.print_prompt()
    if tool is not None:
        _deprecated("--print-tool", f"ipse micro-handoff tool {tool}")
        micro_handoff.print_tool(tool)
    if notes_file is not None:
        _deprecated("--render-notes", "ipse micro-handoff render-notes FILE")
        micro_handoff.print_notes(notes_file)
    return prompt or tool is not None or notes_file is not None


def _deprecated(option: str, replacement: str) -> None:
    click.echo(f"ipse: warning: ipse handoff {option} is deprecated; use `{replacement}`", err=True)
