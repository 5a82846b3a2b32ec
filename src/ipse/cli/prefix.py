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
from ipse.cli._output import (
    console,
    emit_json,
    print_table,
    progress,
    terminal_progress,
    warn,
)
from ipse.errors import CheckFailed, InputError, UsageError
from ipse.prefix import MIN_TOKENS, PROVIDERS, PrefixReport, analyze, read_requests
from ipse.transcript import FORMATS

if TYPE_CHECKING:
    from ipse.prefix import Finding

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
    limit = _limit(fail_over) if fail_over is not None else None
    with terminal_progress(quiet=as_json):
        requests_log = read_requests(log, fmt)
        report = analyze(
            requests_log.requests,
            provider,
            tokenizer=tokenizer,
            progress=lambda items: progress(items, "replaying", total=len(requests_log.requests)),
            warnings=requests_log.warnings,
            min_tokens=min_tokens,
            merged=requests_log.merged,
        )
    lifetime.keep(requests_log, report)
    summary = report.summary()
    if as_json:
        document = report.to_json()
        if show_values:
            for row, entry in zip(report.rows, document["requests"], strict=True):
                entry["value"] = row.cause.value if row.cause else None
        emit_json(document)
    else:
        for line in report.warnings:
            warn(line)
        _render(report, show_values, summary)
    if limit is not None:
        _gate(summary, *limit)


def _watch(
    folder: Path | None, min_tokens: int, once: bool, max_time: float | None, interval: float
) -> None:
    """``--watch``: one line per new break in the session files under ``folder``."""
    import time

    from ipse.prefix import Watcher, default_folders

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


def _limit(text: str) -> tuple[float, bool]:
    """``--fail-over``: (the limit, whether it is a share of the cost in percent)."""
    value = text.strip()
    percent = value.endswith("%")
    value = value.removesuffix("%").removeprefix("$").strip()
    try:
        number = float(value)
    except ValueError:
        raise UsageError(
            f"--fail-over takes dollars (0.50) or a share of the cost (5%), not {text!r}"
        ) from None
    if number < 0 or number != number:
        raise UsageError(f"--fail-over must be a number of at least 0, not {text!r}")
    return number, percent


def _gate(summary: dict[str, Any], limit: float, percent: bool) -> None:
    """Exit 1 (one line on stderr) when the loss exceeds the limit."""
    lost, cost = summary["cost_lost_usd"], summary["cost_usd"]
    if percent:
        share = 100 * lost / cost if cost else 0.0
        if share > limit:
            raise CheckFailed(f"prefix cache loss {share:.2f}% of the cost exceeds {limit:g}%")
    elif lost > limit:
        raise CheckFailed(f"prefix cache loss {_money(lost)} exceeds {_money(limit)}")


def _money(value: float) -> str:
    return f"${value:,.4f}"


def _render(
    report: PrefixReport, show_values: bool = False, summary: dict[str, Any] | None = None
) -> None:
    out = console()
    _render_table(out, report)
    _render_causes(out, report, show_values)
    summary = summary if summary is not None else report.summary()
    _render_totals(out, summary)
    _render_handoffs(out, report)
    _render_basis(out, summary)


def _render_handoffs(out: Any, report: PrefixReport) -> None:
    """The requests ipse's handoff rewrote (the proxy's record says so), whatever their loss."""
    for row in report.rows:
        if row.handoff is not None:  # the proxy's record: its handoff rewrote this request
            shown = row.handoff
            out.print(
                f"request {row.index}: ipse's handoff at {shown['anchor']} removed "
                f"{shown['removed_calls']} tool call(s), saved {shown['saved_tokens']} tokens",
                markup=False,
            )


def _render_table(out: Any, report: PrefixReport) -> None:
    """One row per request: the predicted tokens, the recorded read, the cause of a loss."""
    agents = any(row.agent is not None for row in report.rows)
    names: tuple[str, ...] = (
        "#",
        "model",
        "read",
        "written",
        "uncached",
        "actual read",
        "agrees",
        "cause",
        "lost",
    )
    if agents:
        names = ("#", "agent", *names[1:])
    left = ("model", "cause", "agrees", "agent")
    columns = [(n, "left" if n in left else "right") for n in names]
    rows = [
        [
            str(row.index) + ("*" if row.off_path else ""),
            *([row.agent or "main"] if agents else []),
            row.model or "-",
            f"{row.predicted.cache_read:,}",
            f"{row.predicted.cache_write:,}",
            f"{row.predicted.uncached:,}",
            f"{row.actual.cache_read:,}" if row.actual else "-",
            "-" if row.agrees is None else ("yes" if row.agrees else "no"),
            f"{row.cause.kind} @ {row.cause.location}" if row.cause else "",
            _money(row.cost_lost_usd) if row.cause else "",
        ]
        for row in report.rows
    ]
    print_table(out, f"prefix cache ({report.provider})", columns, rows)


def _render_causes(out: Any, report: PrefixReport, show_values: bool) -> None:
    """What the table's marks mean, then each loss's cause (and each predicted one the record
    does not charge)."""
    if any(row.off_path for row in report.rows):
        out.print("*: billed, but not on the live path (interrupted or retried)")
    if any(row.agrees is False for row in report.rows):
        out.print(
            "agrees no: the recorded read differs from the prediction "
            "(by more than 5% of the input and 128 tokens)"
        )
    for row in report.rows:
        if row.cause is not None:
            out.print(f"#{row.index} {row.cause.kind} at {row.cause.location}: {row.cause.detail}")
            if show_values and row.cause.value is not None:
                out.print(f"    value: {row.cause.value!r}")
        elif row.predicted_cause is not None:
            out.print(
                f"#{row.index} predicted {row.predicted_cause.kind} at "
                f"{row.predicted_cause.location}, but the recorded usage shows no loss: "
                "not charged"
            )


def _render_totals(out: Any, summary: dict[str, Any]) -> None:
    """The hit rate and the costs, then the loss per cause, compaction, cold starts, agents."""
    out.print(
        f"hit rate {summary['hit_rate']:.1%}"
        + (f" (recorded {summary['actual_hit_rate']:.1%})" if "actual_hit_rate" in summary else "")
        + f"   cost {_money(summary['cost_usd'])}   ideal {_money(summary['cost_ideal_usd'])}"
        f"   lost {_money(summary['cost_lost_usd'])}"
    )
    for kind, entry in summary["by_cause"].items():
        out.print(
            f"  {kind}: {entry['requests']} request(s), {entry['tokens_lost']:,} tokens, "
            f"{_money(entry['cost_lost_usd'])}"
        )
    compaction = summary["compaction"]
    if compaction["requests"]:
        out.print(
            f"compaction (apart, not in the loss above): {compaction['requests']} request(s), "
            f"{compaction['tokens_lost']:,} tokens, {_money(compaction['cost_lost_usd'])}"
        )
    cold = summary["cold_starts"]
    if cold["requests"]:
        out.print(
            f"cold starts (nothing cached before them): {cold['requests']} request(s), "
            f"{cold['tokens_written']:,} tokens written, {_money(cold['cost_usd'])}"
        )
    for agent, entry in summary.get("by_agent", {}).items():
        out.print(
            f"  agent {agent}: {entry['requests']} request(s), cost {_money(entry['cost_usd'])}"
            f", lost {entry['tokens_lost']:,} tokens, {_money(entry['cost_lost_usd'])}"
        )


def _render_basis(out: Any, summary: dict[str, Any]) -> None:
    """What the numbers rest on: merged records, off-path calls, the advice, the least loss
    reported, recorded usage and how well the prediction agrees with it, TTLs, tokens."""
    if summary["merged_records"]:
        out.print(
            f"{summary['merged_records']} record(s) without a response id belonged to the call "
            "before them (its request id, or with no id its usage): merged into it"
        )
    if summary["off_path"]:
        out.print(f"{summary['off_path']} billed call(s) off the live path counted")
    _render_advice(out, summary["advice"])
    out.print(f"losses from {summary['min_tokens']:,} tokens reported (--min-tokens)")
    basis = summary["basis"]
    if basis["recorded"]:
        out.print(
            f"cost and loss from recorded usage for {basis['recorded']} of "
            f"{summary['requests']} requests (predicted hit rate "
            f"{summary['predicted_hit_rate']:.1%})"
        )
    agreement = summary.get("agreement")
    if agreement:
        out.print(
            f"agreement with recorded usage: {agreement['agreeing']}/{agreement['compared']} "
            f"requests ({agreement['tolerance']})"
        )
    out.print(f"TTL analysis: {summary['ttl_analysis']}; tokens: {summary['tokens_estimated_by']}")


def _render_advice(out: Any, advice: dict[str, Any]) -> None:
    for kind, fix in advice["fixes"].items():
        out.print(f"fix {kind}: {fix}")
    ttl = advice.get("ttl")
    if not ttl or not ttl["idle_breaks"]:
        return
    hour, keep = ttl["one_hour_ttl"], ttl["keep_alive"]
    out.print(
        f"1-hour TTL: {_money(hour['extra_write_usd'])} more for writes, "
        f"{_money(hour['saved_usd'])} of losses avoided: "
        + ("would have paid for itself" if hour["pays"] else "would not have paid")
    )
    out.print(
        f"keep-alive: {keep['pings']} ping(s), {_money(keep['cost_usd'])}, "
        f"{_money(keep['saved_usd'])} of losses avoided: "
        + ("would have paid for itself" if keep["pays"] else "would not have paid")
        + f" (break-even gap {keep['break_even_gap_s']['5m']:,} s on a 5-minute TTL)"
    )


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
