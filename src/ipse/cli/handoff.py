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
from ipse.cli.micro_handoff import SHAPES
from ipse.errors import UsageError
from ipse.handoff import (
    CHECKPOINT_TOOL,
    DEFAULT_LEDGER_TOKENS,
    Handoff,
    HandoffOptions,
    StripOptions,
    handoff_session,
    run,
)
from ipse.tokens import load_before
from ipse.transcript import FORMATS, Source, codec, load

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
    output = _destination(output, target, as_json)
    to_stdout = output is not None and str(output) == "-"
    dry_run = output is None and target == "body"
    source = _load_source(file, fmt, thread, quiet=as_json)
    best = _best(source, file) if at == "best" else None
    at = str(best["cut"]) if best else at
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
        budget=budget,
        ledger_tokens=ledger_tokens,
    )
    resumed: list[tuple[str, Path]] = []
    write = _target_writer(source, target, output, cwd, resumed)
    archive = None if no_archive or dry_run else _open_archive(store)
    session = session or handoff_session(source, (checkpoint_tool,))
    result = _hand_off(
        source,
        options,
        session,
        write,
        archive,
        str(file),
        quiet=as_json,
        recallable=not no_archive,
    )
    document = _document(result, output, dry_run, resumed)
    if best is not None:
        document["best"] = best
    if as_json:
        emit_json(document)
    else:
        _render(document, archiving=archive is not None, to_stderr=to_stdout)
    _warn_after(result, dry_run=dry_run, target=target)


def _hand_off(
    source: Source,
    options: HandoffOptions,
    session: str,
    write: Callable[[bytes], None] | None,
    archive: LazyArchive | None,
    file: str,
    *,
    quiet: bool,
    recallable: bool,
) -> Handoff:
    """Run the handoff on the source's conversation; the archive is closed whatever happens.
    ``recallable``: the marker promises recall (a dry run describes the run that archives)."""
    try:
        with terminal_progress(quiet=quiet):
            conversation = source.current()
            return run(
                conversation,
                options,
                session=session,
                write=write,
                archive=archive,
                source=file,
                recallable=recallable,
            )
    finally:
        if archive is not None:
            archive.close()


def _destination(output: Path | None, target: str, as_json: bool) -> Path | None:
    """Where the body goes (``-`` for stdout, None for nowhere), checked against the target
    and --json: piped with no -o, the body is the command's output and the report goes to
    stderr."""
    if target == "claude-code" and output is not None:
        raise UsageError("--to claude-code writes a session file; -o is for --to body")
    if output is None and target == "body" and not as_json and not sys.stdout.isatty():
        output = Path("-")  # piped: the body is the command's output, the report goes to stderr
    to_stdout = output is not None and str(output) == "-"
    if to_stdout and as_json:
        raise UsageError("-o - and --json would both write to stdout; choose one")
    if output is not None and not to_stdout and output.is_dir():
        raise UsageError(f"{output}: is a folder; -o takes a file path")
    return output


def _load_source(file: Path, fmt: str | None, thread: str | None, *, quiet: bool) -> Source:
    """Read the input (and the token counter the report needs); its warnings go to stderr."""
    with terminal_progress(quiet=quiet):
        load_before(file)  # the report counts tokens
        source = load(file, fmt, thread=thread)
    lifetime.keep(source)  # (a one-shot command need not free it object by object)
    for line in source.warnings:  # e.g. results whose calls are not in the file
        warn(line)
    return source


def _target_writer(
    source: Source,
    target: str,
    output: Path | None,
    cwd: Path | None,
    resumed: list[tuple[str, Path]],
) -> Callable[[bytes], None] | None:
    """What writes the handed-off body: a new Claude Code session (its id and path go to
    ``resumed``) or the body itself (see `_writer`)."""
    if target == "claude-code" and codec(source.current().dialect).provider != "anthropic":
        raise UsageError("--to claude-code needs an Anthropic conversation (a Claude Code session)")
    if target == "claude-code":
        return _session_writer(source, (cwd or Path.cwd()).resolve(), resumed)
    return _writer(output)


def _document(
    result: Handoff, output: Path | None, dry_run: bool, resumed: list[tuple[str, Path]]
) -> dict[str, Any]:
    """The result's JSON document with where it went: the output, and the session to resume."""
    document: dict[str, Any] = result.document()
    document["output"] = str(resumed[0][1]) if resumed else (str(output) if output else None)
    document["dry_run"] = dry_run
    if resumed:
        document["claude_code"] = {
            "session": resumed[0][0],
            "path": str(resumed[0][1]),
            "resume": f"claude --resume {resumed[0][0]}",
        }
    return document


def _warn_after(result: Handoff, *, dry_run: bool, target: str) -> None:
    """The warnings that follow the report: a dry run, a body with no model, thin narration,
    parts carried over as the input had them."""
    if dry_run:
        warn("dry run: nothing written or archived (give -o FILE, or -o - for stdout)")
    if target == "body" and result.after.model is None:
        warn("the body names no model (the input records none); give it with --model")
    if result.narration.warning:
        warn(result.narration.warning)
    for problem in result.report.carried_problems:
        warn(f"untouched part, as in the input: {problem}")


def _best(source: Source, file: Path) -> dict[str, Any]:
    """``--at best``: the cut `ipse.probe.best_of` chooses in the conversation to rewrite."""
    from ipse.probe import best_of

    return best_of(source.current(), file)


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


def _best_line(best: dict[str, Any]) -> str:
    c = best["continuity"]
    kept = "-" if c["in_context"] is None else f"{c['in_context']:g}%"
    recall = "-" if c["recallable"] is None else f"{c['recallable']:g}%"
    return (
        f"best cut: message {best['cut']} of {best['candidates']} turn boundaries scored: keeps "
        f"{kept} of the {c['demanded']} facts the agent used next, {recall} more recallable, "
        f"saves {c['saved_tokens']:,} tokens on each of {c['later_turns']} later turns "
        f"(rule: {best['rule']})"
    )


def _marked_lines(document: dict[str, Any]) -> list[str]:
    """What the marker at the cut carries, and what the budget did."""
    lines = []
    ledger, marker, budget = document["ledger"], document["marker"], document["budget"]
    if ledger is not None:
        where = f"a marker at message {marker['message']}" if marker else "the checkpoint's notes"
        lines.append(
            f"ledger in {where}: {ledger['shown']} of {len(ledger['entries'])} entries, "
            f"{ledger['tokens']:,} tokens (cap {ledger['cap']:,}), from {ledger['calls']} "
            "removed calls (--json: ledger, marker)"
        )
    if budget is not None:
        met = "met" if budget["met"] else "NOT met (the human's words and the notes stay)"
        line = (
            f"budget {budget['tokens']:,} tokens: {met}, the rewritten part holds "
            f"{budget['rewritten_tokens']:,}"
        )
        page = budget["paged"]
        if page is not None:
            line += (
                f"; narration of messages {page['first_message']}-{page['last_message']} "
                f"({page['tokens']:,} tokens) archived as {page['id']}"
            )
        lines.append(line)
    return lines


def _deprecated(option: str, replacement: str) -> None:
    click.echo(f"ipse: warning: ipse handoff {option} is deprecated; use `{replacement}`", err=True)


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
    for key in document["before"]:  # (`Handoff.document`'s counts, in their order)
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
    for line in _marked_lines(document):
        out.print(line, markup=False)
    if "best" in document:
        out.print(_best_line(document["best"]), markup=False)
    policy = document["policy"]
    out.print(f"policy: {'hand off' if policy['handoff'] else 'wait'} ({policy['reason']})")
    if document["output"] and document["output"] != "-":
        out.print(f"wrote {document['output']}", markup=False)
    if "claude_code" in document:
        out.print(f"continue it with: {document['claude_code']['resume']}", markup=False)
