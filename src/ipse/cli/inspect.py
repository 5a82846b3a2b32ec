"""``ipse inspect``: what a session or request log is made of."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ipse._tokens import MemoCounter, default_counter, load_before
from ipse.cli import _lifetime as lifetime
from ipse.cli._output import console, emit_json, print_table, terminal_progress, warn
from ipse.errors import InputError
from ipse.transcript import FORMATS, load
from ipse.transcript._shared import BAD_LINE, NOT_AN_OBJECT, inspect_report, message_rows


@click.command("inspect")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Name the input format instead of detecting it.",
)
@click.option(
    "--thread",
    help="A Claude Code thread other than the main one (e.g. sidechain-1, agent-a2898e3).",
)
@click.option(
    "--skip-bad-lines",
    is_flag=True,
    help="Continue past JSONL lines that do not parse (each is reported).",
)
@click.option(
    "--messages",
    "list_messages",
    is_flag=True,
    help="List the messages by the index `ipse handoff --at N` counts (what each holds, "
    "its tokens; never its text).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def inspect_command(
    file: Path,
    fmt: str | None,
    thread: str | None,
    skip_bad_lines: bool,
    list_messages: bool,
    as_json: bool,
) -> None:
    """Show what a session is made of: messages, turns, tool calls by tool, tokens by kind.

    FILE is a Claude Code session (.jsonl), an Anthropic or OpenAI chat request body (.json),
    a Codex rollout, or an HTTP log (JSONL, a folder of exchanges, or HAR; one row per request).

    \b
    Examples:
      ipse inspect ~/.claude/projects/myproj/4d5611e5.jsonl
      ipse inspect request.json --json
      ipse inspect session.jsonl --thread sidechain-1
      ipse inspect session.jsonl --messages     (the indices for handoff --at N)
    """
    with terminal_progress(quiet=as_json):
        load_before(file)
        try:
            source = load(file, fmt, thread=thread, skip_bad_lines=skip_bad_lines)
        except InputError as exc:
            if exc.detail not in (BAD_LINE, NOT_AN_OBJECT):
                raise
            hint = f"{exc.detail} (use --skip-bad-lines to continue past it)"
            raise InputError(hint, path=exc.path, position=exc.position) from exc
        lifetime.keep(source)  # (a one-shot command need not free it object by object)
        # the tokens by kind and the rows of --messages count the same blocks: once
        counter = MemoCounter(default_counter()) if list_messages else default_counter()
        report = inspect_report(source, counter)
        if source.exchanges is not None:
            report["handoffs"] = _handoffs(file, skip_bad_lines)
        _recorded_cache(report)
        if list_messages:
            report["message_index"] = message_rows(source.current(), counter)
    if as_json:
        emit_json(report)
        return
    for line in report.get("warnings", []):
        warn(line)
    _render(report)


def _handoffs(path: Path, skip_bad_lines: bool) -> list[dict[str, Any]]:
    """The handoffs an ipse proxy's record says it made, each cut once, with the saving it
    measured (`ipse._handoff_events`, as ``ipse prefix`` and ``ipse report`` read them)."""
    from ipse._handoff_events import RecordedHandoffs, saved_tokens
    from ipse.transcript._shared import iter_entries

    events = RecordedHandoffs()
    found = []
    for index, (_, entry) in enumerate(iter_entries(path, skip_bad_lines=skip_bad_lines)):
        made = events.event(entry)
        if made is not None:
            anchor, calls = made.get("anchor"), made.get("removed_calls")
            found.append({"index": index, "anchor": anchor, "removed_calls": calls,
                          "saved_tokens": saved_tokens(made)})  # fmt: skip
    return found


def _recorded_cache(report: dict[str, Any]) -> None:
    """Each request's recorded usage as ``recorded``: input tokens in all, read from the cache,
    written to it, and neither, read the one way `ipse.prefix.actual_tokens` reads every
    provider's usage (Anthropic's cache fields, OpenAI's ``cached_tokens``), as ``ipse prefix``
    and ``ipse report`` read it; None when the usage says nothing."""
    rows = report.get("requests")
    if not rows:
        return
    from ipse.prefix._shared import actual_tokens

    for row in rows:
        tokens = actual_tokens(row["usage"])
        row["recorded"] = (
            None
            if tokens is None
            else {
                "input": tokens.total,
                "cache_read": tokens.cache_read,
                "cache_write": tokens.cache_write,
                "uncached": tokens.uncached,
            }
        )


def _render(report: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    title = f"{report['path']}  ({report['format']}"
    if "thread" in report:
        title += f", thread {report['thread']}, {report['compactions']} compaction(s)"
    out.print(title + ")", style="bold")
    out.print(
        f"messages {report['messages']}   human turns {report['turns']}   "
        f"tool calls {report['tool_calls']}"
    )
    if "after_last_compaction" in report and report["compactions"]:
        last = report["after_last_compaction"]
        out.print(
            f"after the last compaction: messages {last['messages']}, "
            f"tool calls {last['tool_calls']}"
        )
    if report["tool_calls_by_name"]:
        tools = Table(title="tool calls by tool", title_justify="left")
        tools.add_column("tool")
        tools.add_column("calls", justify="right")
        for name, count in report["tool_calls_by_name"].items():
            tools.add_row(name, str(count))
        out.print(tools)
    tokens = report["tokens"]
    out.print(f"tokens counted with {tokens['tokenizer']}")
    table = Table(title="tokens by kind", title_justify="left")
    table.add_column("kind")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    for kind, count in tokens["by_kind"].items():
        if count:
            table.add_row(kind, f"{count:,}", f"{tokens['shares'][kind]:.1%}")
    table.add_row("total", f"{tokens['total']:,}", "100%", style="bold")
    out.print(table)
    if "requests" in report:
        rows = []
        for row in report["requests"]:
            split = row["recorded"]
            recorded = (
                f"{split['input']:,} / {split['cache_read']:,} / {split['cache_write']:,}"
                if split
                else "-"
            )
            rows.append(
                [
                    str(row["index"]),
                    row["time"] or "-",
                    row["model"] or "-",
                    f"{row['input_tokens']:,}",
                    recorded,
                ]
            )
        names = ("#", "time", "model", "input tokens", "recorded: input / cache read / write")
        print_table(out, "requests", [(name, "left") for name in names], rows)
    if report.get("conversations"):
        _render_conversations(out, report["conversations"])
    _render_handoffs(out, report.get("handoffs", []))
    if report.get("other_exchanges"):
        others = ", ".join(f"{label} x{n}" for label, n in report["other_exchanges"].items())
        out.print(f"other exchanges (not conversation turns): {others}", markup=False)
    if "message_index" in report:
        _render_messages(out, report["message_index"])


def _render_conversations(out: Any, conversations: list[dict[str, Any]]) -> None:
    """A row per conversation of a log that holds several (a proxy's record)."""
    names = ("conversation", "requests", "last request", "messages", "input tokens")
    rows = [
        [str(c["conversation"] or "-"), str(c["requests"]), str(c["last_request"]),
         str(c["messages"]), f"{c['input_tokens']:,}"]
        for c in conversations
    ]  # fmt: skip
    print_table(out, "conversations", [(name, "left") for name in names], rows)


def _render_handoffs(out: Any, handoffs: list[dict[str, Any]]) -> None:
    for made in handoffs:
        saved = made["saved_tokens"]
        out.print(
            f"request {made['index']}: ipse's handoff at {made['anchor']} removed "
            f"{made['removed_calls']} tool call(s), saved {'-' if saved is None else saved} tokens",
            markup=False,
        )


def _render_messages(out: Any, rows: list[dict[str, Any]]) -> None:
    columns = [("#", "right"), ("role", "left"), ("holds", "left"), ("tokens", "right")]
    cells = [
        [str(row["index"]), row["role"], ", ".join(row["holds"]), f"{row['tokens']:,}"]
        for row in rows
    ]
    title = "messages (ipse handoff --at N hands off messages 0..N-1)"
    print_table(out, title, columns, cells)
