"""``ipse usage``: the bill across every session a user has, and Claude Code's status line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ipse.cli._output import console, emit_json, print_table, terminal_progress, warn
from ipse.usage._shared import GROUPS


def _folders() -> list[Any]:
    """Each agent CLI's session folder, from the agent table (its environment respected)."""
    from ipse.agents._shared import agents_with_sessions
    from ipse.usage._shared import Folder

    out = []
    for agent in agents_with_sessions():
        root = agent.sessions_root()
        if root is not None and agent.session_globs and agent.session_format:
            out.append(Folder(root, agent.session_globs, agent.session_format))
    return out


def _zone(name: str | None) -> Any:
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        from ipse.errors import UsageError

        raise UsageError(
            f"unknown time zone {name!r} (an IANA name, such as Europe/Paris)"
        ) from None


@click.group(
    "usage",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--by",
    type=click.Choice(GROUPS),
    default="day",
    show_default=True,
    help="Group by day, week, month, project, session, model or 5-hour block.",
)
@click.option("--since", help="First day counted (YYYY-MM-DD or YYYYMMDD, local).")
@click.option("--until", help="Last day counted (YYYY-MM-DD or YYYYMMDD, local).")
@click.option("--timezone", "zone_name", help="Time zone of days (IANA name; default: local).")
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Read these files or folders instead of the agent CLIs' session folders "
    "(repeatable; an ipse proxy record too).",
)
@click.option(
    "--losses",
    is_flag=True,
    help="Replay the sessions that changed to find their cache losses (slower).",
)
@click.option("--store", help="The store URL (default: IPSE_DATABASE_URL, else ipse.db).")
@click.option("--jobs", type=click.IntRange(1, 64), help="Processes reading (default: cores).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def usage_group(
    ctx: click.Context,
    by: str,
    since: str | None,
    until: str | None,
    zone_name: str | None,
    paths: tuple[Path, ...],
    losses: bool,
    store: str | None,
    jobs: int | None,
    as_json: bool,
) -> None:
    """What every Claude Code, Codex and Gemini CLI session cost: tokens of each kind
    (input, cache writes at 5 minutes and 1 hour, cache reads, output) and dollars, by day,
    week, month, project, session, model or 5-hour block, with the cache losses the prefix
    replay found (by cause) and what ipse's handoffs saved.

    Reads the session folders of every agent CLI (CLAUDE_CONFIG_DIR, CODEX_HOME and
    GEMINI_CLI_HOME respected), sub-agents included, each billed call once; an index in the
    store keeps what was read, so a later run reads only what changed.

    \b
    Examples:
      ipse usage                          tokens and cost by day
      ipse usage --by block --since 20261201
      ipse usage --by model --json
      ipse usage --path proxy-record.jsonl --by session
      ipse usage --losses --by project    with the cache losses of each project
      ipse usage statusline               Claude Code's status line (reads its JSON on stdin)
    """
    if ctx.invoked_subcommand is not None:
        return
    from ipse.usage import collect, group, total
    from ipse.usage._shared import parse_day, replay_losses

    zone = _zone(zone_name)
    first = parse_day(since) if since else None
    last = parse_day(until) if until else None
    folders = [] if paths else _folders()
    with terminal_progress(quiet=as_json):
        collected = collect(folders, list(paths), store=store, jobs=jobs)
        if losses:
            collected = replay_losses(collected, folders, list(paths), store=store)
    for line in collected.warnings:
        warn(line)
    ledger = collected.ledger
    buckets = group(ledger, by, zone=zone, since=first, until=last)
    summed = total(buckets)
    if as_json:
        emit_json(
            {
                "by": by,
                "rows": [b.to_json() for b in buckets],
                "total": summed.to_json(),
                "files": collected.files,
                "files_read": len(collected.read),
                "duplicates": ledger.duplicates,
                "sessions_replayed": ledger.replayed,
                "sessions_not_replayed": ledger.unreplayed,
                "unpriced_models": ledger.unpriced,
            }
        )
        return
    _print(by, buckets, summed, ledger, collected)


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _print(by: str, buckets: list[Any], summed: Any, ledger: Any, collected: Any) -> None:
    out = console()
    columns = [(by, "left"), ("calls", "right"), ("input", "right"), ("write 5m", "right"),
               ("write 1h", "right"), ("read", "right"), ("output", "right"), ("cost", "right"),
               ("hit", "right"), ("lost", "right"), ("saved", "right")]  # fmt: skip
    rows = [_cells(b) for b in buckets]
    rows.append(_cells(summed))
    title = f"usage by {by}: {collected.files} files ({len(collected.read)} read now)"
    print_table(out, title, columns, rows)
    if summed.lost:
        causes = ", ".join(
            f"{k} {_money(v)}" for k, v in sorted(summed.lost.items(), key=lambda x: -x[1])
        )
        out.print(f"cache losses by cause: {causes}")
    if ledger.unreplayed:
        out.print(
            f"cache losses known for {ledger.replayed} of {ledger.replayed + ledger.unreplayed}"
            " sessions (ipse usage --losses replays the rest)"
        )
    if ledger.unpriced:
        out.print(f"priced at their provider's default: {', '.join(ledger.unpriced)}")


def _cells(b: Any) -> list[str]:
    return [b.label, f"{b.calls:,}", f"{b.input:,}", f"{b.write_5m:,}", f"{b.write_1h:,}",
            f"{b.read:,}", f"{b.output:,}", _money(b.cost), f"{b.hit_rate:.0%}",
            _money(b.lost_usd), _money(b.saved_usd)]  # fmt: skip


@usage_group.command("statusline")
def statusline_command() -> None:
    """Claude Code's status line: context used, this session's cost, cache hit rate, and
    what ipse saved. Reads the JSON Claude Code pipes to a statusLine command on stdin.

    \b
    Examples:
      ipse install --agent claude-code --statusline     set it up
      echo '{"transcript_path": "s.jsonl"}' | ipse usage statusline
    """
    from ipse.usage import statusline

    sys.stdout.write(statusline(sys.stdin.buffer.read()) + "\n")
