"""``ipse prefix`` and ``ipse lint``: where and why requests stopped sharing a cached prefix,
and the lints that keep the front of a request frozen.

A changed or volatile value in the front of a request is often a credential (a rotated token
in a system prompt): both commands say where it is, what kind it is and a short hash of it,
and print the value itself only with ``--show-values``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ipse.cli import _lifetime as lifetime
from ipse.cli import _replay as replaying
from ipse.cli._output import console, emit_json, terminal_progress, warn
from ipse.errors import CheckFailed, InputError, UsageError
from ipse.prefix import read_requests
from ipse.prefix._shared import MIN_TOKENS, PROVIDERS
from ipse.transcript import FORMATS

if TYPE_CHECKING:
    from ipse.prefix._shared import Finding

_FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Name the input format instead of detecting it.",
)
_SHOW_VALUES = click.option(
    "--show-values",
    is_flag=True,
    help="Also print changed or volatile values (default: where, what kind, and a short hash).",
)


@click.command("prefix")
@click.argument("log", type=click.Path(path_type=Path), required=False)
@_FORMAT
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="The cache to simulate (default: by the requests' shape; vllm must be named).",
)
@click.option(
    "--tokenizer",
    type=click.Choice(["auto", "o200k", "bytes"]),
    default="auto",
    show_default=True,
    help="How block tokens are estimated: auto uses byte estimates scaled to recorded usage "
    "when every request has usage, o200k counts otherwise.",
)
@click.option(
    "--min-tokens",
    type=click.IntRange(min=0),
    default=MIN_TOKENS,
    show_default=True,
    help="Report every loss the record shows of at least this many tokens.",
)
@click.option(
    "--fail-over",
    metavar="USD|PCT",
    help="Exit 1 when the loss exceeds this many dollars (0.50, $0.50) or this share of the "
    "cost (5%): a gate for CI.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Follow the session files under LOG (default: ~/.claude/projects and "
    "~/.codex/sessions) as they are written: one line per new break.",
)
@click.option("--once", is_flag=True, help="With --watch: report every break found, then exit.")
@click.option(
    "--max-time",
    type=click.FloatRange(min=0),
    help="With --watch: stop after this many seconds.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="With --watch: seconds between looks at the files.",
)
@_SHOW_VALUES
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def prefix_command(
    log: Path | None,
    fmt: str | None,
    provider: str | None,
    tokenizer: str,
    min_tokens: int,
    fail_over: str | None,
    watch: bool,
    once: bool,
    max_time: float | None,
    interval: float,
    show_values: bool,
    as_json: bool,
) -> None:
    """Replay a log through the provider's prompt cache: per request the tokens reused,
    written and uncached, the cause of every lost reuse, and what it cost.

    LOG is an HTTP log (JSONL, a folder of exchanges, HAR), a JSONL of request bodies with
    optional "ts" and "usage", a Claude Code session (one request per billed call, its
    sub-agents' with it) or a Codex rollout. With --watch, LOG is a folder to follow.

    \b
    Examples:
      ipse prefix captured/                     # a folder of exchanges
      ipse prefix requests.jsonl --provider vllm --json
      ipse prefix ~/.claude/projects/p/4d5611e5.jsonl
      ipse prefix session.jsonl --fail-over 5%   # exit 1 when more than 5% is lost
      ipse prefix --watch                       # follow Claude Code and Codex sessions
    """
    if watch:
        _watch(log, min_tokens, once, max_time, interval)
        return
    if once or max_time is not None:
        raise UsageError("--once and --max-time go with --watch")
    if log is None:
        raise UsageError("give a LOG to analyse, or --watch")
    limit = replaying.limit(fail_over) if fail_over is not None else None
    with terminal_progress(quiet=as_json):
        requests_log, report = replaying.replay(log, fmt, provider, tokenizer, min_tokens)
    lifetime.keep(requests_log, report)
    replaying.show(report, show_values, as_json, limit, console, emit_json, warn)


def _watch(
    folder: Path | None, min_tokens: int, once: bool, max_time: float | None, interval: float
) -> None:
    """``--watch``: one line per new break in the session files under ``folder``."""
    import time

    from ipse.prefix._shared import Watcher, default_folders

    folders = [folder] if folder is not None else default_folders()
    if not folders or not all(f.exists() for f in folders):
        raise InputError("nothing to watch: no such folder", path=folder or Path("~/.claude"))
    root = folder if folder is not None and folder.is_dir() else None
    watcher = Watcher(folders, min_tokens=min_tokens, from_start=once)
    out = console()
    deadline = None if max_time is None else time.monotonic() + max_time
    try:
        while True:
            for found in watcher.poll():
                out.print(found.line(root), highlight=False, soft_wrap=True)
            if once or (deadline is not None and time.monotonic() >= deadline):
                return
            pause = interval if deadline is None else min(interval, deadline - time.monotonic())
            time.sleep(max(0.0, pause))
    except KeyboardInterrupt:
        return


@click.command("lint")
@click.argument("request", type=click.Path(path_type=Path))
@_FORMAT
@click.option("--provider", type=click.Choice(PROVIDERS), help="The cache rules to lint against.")
@_SHOW_VALUES
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def lint_command(
    request: Path, fmt: str | None, provider: str | None, show_values: bool, as_json: bool
) -> None:
    """Check that the front of a request is frozen: no volatile values in the system prompt or
    tools, a stable tool order, breakpoints with stable content before them, TTLs in order,
    at most 4 breakpoints. Exits 1 when it finds a problem.

    REQUEST is a request body (.json), or a log or session (the last request is linted, and
    its tool order compared with the request before it).

    \b
    Examples:
      ipse lint request.json
      ipse lint captured/ --json
    """
    from ipse.prefix import lint  # (the linter's modules only for this command)

    log = read_requests(request, fmt)
    for line in log.warnings:
        warn(line)
    if not log.requests:
        raise InputError("no request to lint", path=request)
    last = log.requests[-1]
    previous = log.requests[-2].body if len(log.requests) > 1 else None
    findings = lint(last.body, provider, previous=previous, usage=last.usage)
    if as_json:
        emit_json(
            {
                "request": last.index,
                "source": last.source,
                "findings": [_finding_json(f, show_values) for f in findings],
                "ok": not findings,
            }
        )
    else:
        _render_findings(findings, show_values)
    if findings:
        raise CheckFailed(f"{len(findings)} problem(s) found")


def _finding_json(finding: Finding, show_values: bool) -> dict[str, Any]:
    document: dict[str, Any] = finding.to_json()
    if show_values and finding.value is not None:
        document["value"] = finding.value
    return document


def _render_findings(findings: list[Finding], show_values: bool = False) -> None:
    out = console()
    if not findings:
        out.print("no problems found")
    for finding in findings:
        out.print(f"{finding.code}  {finding.location}: {finding.message}")
        if show_values and finding.value is not None:
            out.print(f"    value: {finding.value!r}")
