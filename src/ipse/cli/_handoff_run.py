"""What ``ipse handoff`` does, without the command-line framework.

The click command (`ipse.cli.handoff`) parses its options into `Arguments`; the executable's
fast path (`ipse.cli._fast_handoff`) parses the usual command lines itself. Both call
`hand_off_file`, which reads the input, hands it off with `ipse.handoff.run`, writes the body
where it goes, and reports through `Printing` (the console, JSON, warnings, the body on
stdout): the same work and the same bytes whichever front end called it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipse._tokens import load_before
from ipse.cli import _lifetime as lifetime
from ipse.cli._output import print_table, terminal_progress
from ipse.cli._quick_count import QuickCounter
from ipse.errors import UsageError
from ipse.handoff import Handoff, HandoffOptions, run
from ipse.handoff._shared import (
    CHECKPOINT_TOOL,
    DEFAULT_LEDGER_TOKENS,
    StripOptions,
    handoff_session,
)
from ipse.transcript import load
from ipse.transcript._shared import Source, codec

if TYPE_CHECKING:
    from ipse.archive._shared import LazyArchive


class Arguments:
    """The command line of ``ipse handoff``, parsed (see the click command for each option)."""

    def __init__(
        self,
        *,
        file: Path,
        output: Path | None = None,
        target: str = "body",
        cwd: Path | None = None,
        max_tokens: int = 8192,
        model: str | None = None,
        at: str = "checkpoint",
        fmt: str | None = None,
        thread: str | None = None,
        checkpoint_tool: str = CHECKPOINT_TOOL,
        keep_blocks: bool = False,
        promote_thinking: bool = False,
        breadcrumbs: bool = False,
        budget: int | None = None,
        ledger_tokens: int = DEFAULT_LEDGER_TOKENS,
        no_archive: bool = False,
        store: str | None = None,
        session: str | None = None,
        as_json: bool = False,
    ) -> None:
        self.file, self.output, self.target, self.cwd = file, output, target, cwd
        self.max_tokens, self.model, self.at, self.fmt = max_tokens, model, at, fmt
        self.thread, self.checkpoint_tool, self.keep_blocks = thread, checkpoint_tool, keep_blocks
        self.promote_thinking, self.breadcrumbs, self.budget = promote_thinking, breadcrumbs, budget
        self.ledger_tokens, self.no_archive, self.store = ledger_tokens, no_archive, store
        self.session, self.as_json = session, as_json

    def options(self, at: str) -> HandoffOptions:
        return HandoffOptions(
            at=at,
            strip=StripOptions(
                checkpoint_tool=self.checkpoint_tool,
                join_texts=not self.keep_blocks,
                promote_thinking=self.promote_thinking,
                breadcrumbs=self.breadcrumbs,
            ),
            max_tokens=self.max_tokens,
            model=self.model,
            budget=self.budget,
            ledger_tokens=self.ledger_tokens,
            counter=QuickCounter(),  # (o200k's counts, without its encoder on a small input)
        )


class Printing:
    """Where the command's output goes: ``console(stderr)`` gives the human report's console,
    ``emit_json`` prints the document, ``warn`` one warning line, ``echo`` the body on stdout."""

    __slots__ = ("console", "echo", "emit_json", "warn")

    def __init__(
        self,
        console: Callable[[bool], Any],
        emit_json: Callable[[Any], None],
        warn: Callable[[str], None],
        echo: Callable[[str], None],
    ) -> None:
        self.console, self.emit_json, self.warn, self.echo = console, emit_json, warn, echo


def hand_off_file(args: Arguments, printing: Printing) -> None:
    """Run ``ipse handoff`` (see the click command's help)."""
    output = _destination(args.output, args.target, args.as_json)
    to_stdout = output is not None and str(output) == "-"
    dry_run = output is None and args.target == "body"
    source = _load_source(args, printing)
    best = _best(source, args.file) if args.at == "best" else None
    at = str(best["cut"]) if best else args.at
    resumed: list[tuple[str, Path]] = []
    write = _target_writer(source, args, output, resumed, printing)
    archive = None if args.no_archive or dry_run else _open_archive(args.store)
    session = args.session or handoff_session(source, (args.checkpoint_tool,))
    result = _hand_off(
        source,
        args.options(at),
        session,
        write,
        archive,
        str(args.file),
        quiet=args.as_json,
        recallable=not args.no_archive,  # (a dry run describes the run that archives)
    )
    document = _document(result, output, dry_run, resumed)
    if best is not None:
        document["best"] = best
    if args.as_json:
        printing.emit_json(document)
    else:
        _render(document, printing.console(to_stdout), archiving=archive is not None)
    _warn_after(result, dry_run=dry_run, target=args.target, warn=printing.warn)


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
    if output is not None and not to_stdout:
        from ipse.fileio import check_output

        check_output(output)  # before the work: a missing folder is not made
    return output


def _load_source(args: Arguments, printing: Printing) -> Source:
    """Read the input (and the token counter the report needs); its warnings go to stderr."""
    with terminal_progress(quiet=args.as_json):
        load_before(args.file)  # the report counts tokens
        source = load(args.file, args.fmt, thread=args.thread)
    lifetime.keep(source)  # (a one-shot command need not free it object by object)
    for line in source.warnings:  # e.g. results whose calls are not in the file
        printing.warn(line)
    return source


def _target_writer(
    source: Source,
    args: Arguments,
    output: Path | None,
    resumed: list[tuple[str, Path]],
    printing: Printing,
) -> Callable[[bytes], None] | None:
    """What writes the handed-off body: a new Claude Code session (its id and path go to
    ``resumed``) or the body itself (see `_writer`)."""
    target = args.target
    if target == "claude-code" and codec(source.current().dialect).provider != "anthropic":
        raise UsageError("--to claude-code needs an Anthropic conversation (a Claude Code session)")
    if target == "claude-code":
        return _session_writer(source, (args.cwd or Path.cwd()).resolve(), resumed)
    return _writer(output, printing.echo)


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


def _warn_after(
    result: Handoff, *, dry_run: bool, target: str, warn: Callable[[str], None]
) -> None:
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
    from ipse.probe._shared import best_of, plan_of

    return best_of(source.current(), file, plan_of(source))


def _open_archive(store: str | None) -> LazyArchive:
    from ipse.archive._shared import LazyArchive, project_key

    # filed under this folder's project, where `ipse recall` run here looks
    return LazyArchive(store, project=project_key(Path.cwd()))


def _writer(output: Path | None, echo: Callable[[str], None]) -> Callable[[bytes], None] | None:
    """Where the body goes: stdout for ``-``, an atomic file write, or nowhere."""
    if output is None:
        return None
    if str(output) == "-":
        return lambda data: echo(data.decode("utf-8"))
    from ipse.fileio import atomic_write

    return lambda data: atomic_write(output, data, private=True, make_folders=False)


def _session_writer(
    source: Source, cwd: Path, written: list[tuple[str, Path]]
) -> Callable[[bytes], None]:
    """Write the body as a new Claude Code session of ``cwd``; its id and path go to ``written``."""
    from ipse import jsonio
    from ipse.transcript._shared import TESTED_VERSION, write_session

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


def _best_line(best: dict[str, Any]) -> str:
    c = best["continuity"]
    kept = "-" if c["in_context"] is None else f"{c['in_context']:g}%"
    reach = "-" if c["reachable"] is None else f"{c['reachable']:g}%"
    return (
        f"best cut: message {best['cut']} of {best['candidates']} turn boundaries scored: keeps "
        f"{kept} of the {c['demanded']} facts the agent used next, {reach} of the others "
        "reachable by recall, "
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


def _render(document: dict[str, Any], out: Any, *, archiving: bool) -> None:
    """The human report on ``out`` (a `console`, or a plain one that draws its own tables)."""
    title = f"handoff ({document['cut']['kind']}, cut at message {document['cut']['at']})"
    columns = [("", "left"), ("before", "right"), ("after", "right"), ("saving", "right")]
    rows = []
    for key in document["before"]:  # (`Handoff.document`'s counts, in their order)
        old, new = document["before"][key], document["after"][key]
        cut = f"{100.0 * (old - new) / old:.1f}%" if old and key != "authored_chars" else ""
        rows.append([_LABELS[key], f"{old:,}", f"{new:,}", cut])
    draw = getattr(out, "table", None)  # (a plain console draws its own)
    if draw is not None:
        draw(title, columns, rows)
    else:
        print_table(out, title, columns, rows)
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


__all__ = ["Arguments", "Printing", "hand_off_file"]
