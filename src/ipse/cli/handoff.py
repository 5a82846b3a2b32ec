"""``ipse handoff``: strip a session at a checkpoint, prove nothing authored was lost, archive
the rest, and print the before/after measurement."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ipse.cli import _lifetime as lifetime
from ipse.cli._output import console, emit_json, terminal_progress, warn
from ipse.errors import InputError, UsageError
from ipse.handoff import (
    CHECKPOINT_TOOL,
    HandoffOptions,
    StripOptions,
    handoff_session,
    narration_prompt,
    render_notes,
    run,
    tool_definition,
)
from ipse.handoff._measure import KEYS
from ipse.tokens import load_before
from ipse.transcript import FORMATS, Source, load

if TYPE_CHECKING:
    from ipse.archive import LazyArchive


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
    "unfinished tool exchange at the end), end (every message), or a message index.",
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
@click.option("--breadcrumbs", is_flag=True, help="Leave one short line per removed call.")
@click.option("--no-archive", is_flag=True, help="Do not archive the removed blocks.")
@click.option("--store", help="Store URL (default: IPSE_DATABASE_URL, else ipse.db in IPSE_HOME).")
@click.option("--session", help="Archive under this session id (default: the session's own).")
@click.option(
    "--print-prompt", is_flag=True, help="Print the narration system-prompt section and exit."
)
@click.option(
    "--print-tool",
    type=click.Choice(["anthropic", "openai-chat", "openai-responses"]),
    is_flag=False,
    flag_value="anthropic",
    help="Print the micro_handoff tool definition in this shape (alone: anthropic) and exit.",
)
@click.option(
    "--render-notes",
    "notes_file",
    type=click.Path(path_type=Path),
    help="Render a micro_handoff notes JSON file as the text that stays, and exit.",
)
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
    removed blocks go to the archive (see `ipse recall`); the table shows the conversation
    before and after. Bad input: exit 2, no output, nothing archived.
    The default cut is the agent's last call of the checkpoint tool; a session without one
    needs --at now, --at end or --at N (`ipse inspect FILE --messages` lists the message indices).

    \b
    Examples:
      ipse handoff ~/.claude/projects/p/4d5611e5.jsonl --at now -o out.json
      ipse handoff request.json -o stripped.json --json
      ipse handoff ~/.claude/projects/p/4d5611e5.jsonl --at now --to claude-code
      ipse handoff trajectory.json --at 40 --breadcrumbs --no-archive
      ipse handoff --print-tool openai-responses
    """
    if _print_only(print_prompt, print_tool, notes_file):
        return
    if file is None:
        raise UsageError("missing FILE (see ipse handoff --help)")
    if target == "claude-code" and output is not None:
        raise UsageError("--to claude-code writes a session file; -o is for --to body")
    if output is None and target == "body" and not as_json and not sys.stdout.isatty():
        output = Path("-")  # piped: the body is the command's output, the report goes to stderr
    to_stdout = output is not None and str(output) == "-"
    dry_run = output is None and target == "body"
    if to_stdout and as_json:
        raise UsageError("-o - and --json would both write to stdout; choose one")
    if output is not None and not to_stdout and output.is_dir():
        raise UsageError(f"{output}: is a folder; -o takes a file path")
    with terminal_progress(quiet=as_json):
        load_before(file)  # the report counts tokens
        source = load(file, fmt, thread=thread)
    lifetime.keep(source)  # (a one-shot command need not free it object by object)
    for line in source.warnings:  # e.g. results whose calls are not in the file
        warn(line)
    options = HandoffOptions(
        at=at,
        strip=StripOptions(
            checkpoint_tool=checkpoint_tool,
            join_texts=not keep_blocks,
            promote_thinking=promote_thinking,
            breadcrumbs=breadcrumbs,
        ),
        max_tokens=max_tokens,
        model=model,
    )
    resumed: list[tuple[str, Path]] = []
    write: Callable[[bytes], None] | None
    if target == "claude-code" and source.current().dialect != "anthropic":
        raise UsageError("--to claude-code needs an Anthropic conversation (a Claude Code session)")
    if target == "claude-code":
        write = _session_writer(source, (cwd or Path.cwd()).resolve(), resumed)
    else:
        write = _writer(output)
    archive = None if no_archive or dry_run else _open_archive(store)
    try:
        with terminal_progress(quiet=as_json):
            result = run(
                source.current(),
                options,
                session=session or handoff_session(source, (checkpoint_tool,)),
                write=write,
                archive=archive,
                source=str(file),
            )
    finally:
        if archive is not None:
            archive.close()
    document = result.document()
    document["output"] = str(resumed[0][1]) if resumed else (str(output) if output else None)
    document["dry_run"] = dry_run
    if resumed:
        document["claude_code"] = {
            "session": resumed[0][0],
            "path": str(resumed[0][1]),
            "resume": f"claude --resume {resumed[0][0]}",
        }
    if as_json:
        emit_json(document)
    else:
        _render(document, archiving=archive is not None, to_stderr=to_stdout)
    if dry_run:
        warn("dry run: nothing written or archived (give -o FILE, or -o - for stdout)")
    if target == "body" and result.after.model is None:
        warn("the body names no model (the input records none); give it with --model")
    if result.narration.warning:
        warn(result.narration.warning)
    for problem in result.report.carried_problems:
        warn(f"untouched part, as in the input: {problem}")


def _open_archive(store: str | None) -> LazyArchive:
    from ipse.archive import LazyArchive

    return LazyArchive(store)


def _writer(output: Path | None) -> Callable[[bytes], None] | None:
    """Where the body goes: stdout for ``-``, an atomic file write, or nowhere."""
    if output is None:
        return None
    if str(output) == "-":
        return lambda data: click.echo(data.decode("utf-8"))
    from ipse.fileio import atomic_write

    return lambda data: atomic_write(output, data, private=True)


def _session_writer(
    source: Source, cwd: Path, written: list[tuple[str, Path]]
) -> Callable[[bytes], None]:
    """Write the body as a new Claude Code session of ``cwd``; its id and path go to ``written``."""
    from ipse import jsonio
    from ipse.transcript.formats.claude_code_session import TESTED_VERSION, write_session

    def write(data: bytes) -> None:
        version = _claude_code_version(source) or TESTED_VERSION
        written.append(write_session(jsonio.loads(data), cwd=str(cwd), version=version))

    return write


def _claude_code_version(source: Source) -> str | None:
    """The Claude Code version that wrote the input session (its last record that says)."""
    if source.session is None:
        return None
    for record in reversed(source.session.records):
        value = record.data.get("version")
        if isinstance(value, str) and value:
            return value
    return None


def _print_only(prompt: bool, tool: str | None, notes_file: Path | None) -> bool:
    if prompt:
        click.echo(narration_prompt(), nl=False)
    if tool is not None:
        emit_json(tool_definition(tool))
    if notes_file is not None:
        from ipse.fileio import read_bytes
        from ipse.transcript._jsonl import parse_json

        notes: Any = parse_json(read_bytes(notes_file), notes_file)
        try:
            click.echo(render_notes(notes))
        except InputError as exc:
            raise InputError(exc.detail, path=notes_file) from exc
    return prompt or tool is not None or notes_file is not None


_LABELS = {
    "messages": "messages",
    "text_blocks": "text blocks",
    "tool_calls": "tool calls",
    "tool_results": "tool results",
    "thinking_blocks": "thinking blocks",
    "authored_chars": "authored characters",
    "tokens": "tokens",
    "bytes": "JSON bytes",
}


def _archived(document: dict[str, Any], archiving: bool) -> str:
    """What the archive got: a rerun finds the removed items already there, and says so."""
    session, archived = document["session"], document["archived"]
    removed = document["removed"]["tool_calls"] + document["removed"]["thinking"]
    if not archiving or archived >= removed:
        return f"archived {archived} item(s) under session {session}"
    if archived == 0:
        return f"the {removed} removed item(s) were already archived under session {session}"
    return (
        f"archived {archived} item(s) under session {session} "
        f"({removed - archived} were already there)"
    )


def _render(document: dict[str, Any], *, archiving: bool, to_stderr: bool = False) -> None:
    from rich.table import Table

    out = console(stderr=to_stderr)
    table = Table(
        title=f"handoff ({document['cut']['kind']}, cut at message {document['cut']['at']})",
        title_justify="left",
    )
    for column in ("", "before", "after", "saving"):
        table.add_column(column, justify="left" if not column else "right")
    for key in KEYS:
        old, new = document["before"][key], document["after"][key]
        cut = f"{100.0 * (old - new) / old:.1f}%" if old and key != "authored_chars" else ""
        table.add_row(_LABELS[key], f"{old:,}", f"{new:,}", cut)
    out.print(table)
    preserved = "yes" if document["authored_preserved"] else "NO"
    narr = document["narration"]
    out.print(
        f"saved {document['saved_tokens_pct']}% of tokens; authored text preserved: {preserved}; "
        + _archived(document, archiving)
    )
    out.print(
        f"narration coverage {narr['coverage']:.0%} of {narr['removed_calls']} removed calls, "
        f"{narr['agent_tokens_per_call']:g} agent tokens per removed call"
    )
    policy = document["policy"]
    out.print(f"policy: {'hand off' if policy['handoff'] else 'wait'} ({policy['reason']})")
    if document["output"] and document["output"] != "-":
        out.print(f"wrote {document['output']}", markup=False)
    if "claude_code" in document:
        out.print(f"continue it with: {document['claude_code']['resume']}", markup=False)
