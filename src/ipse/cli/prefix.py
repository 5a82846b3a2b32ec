"""``ipse prefix`` and ``ipse lint``: where and why requests stopped sharing a cached prefix,
and the lints that keep the front of a request frozen.

A changed or volatile value in the front of a request is often a credential (a rotated token
in a system prompt): both commands say where it is, what kind it is and a short hash of it,
and print the value itself only with ``--show-values``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ipse import lifetime
from ipse.cli._output import (
    console,
    emit_json,
    print_table,
    progress,
    terminal_progress,
    warn,
)
from ipse.errors import CheckFailed, InputError
from ipse.prefix._report import PrefixReport, analyze
from ipse.prefix._requests import read_requests
from ipse.prefix._rules import PROVIDERS
from ipse.transcript import FORMATS

if TYPE_CHECKING:
    from ipse.prefix._lint import Finding

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
@click.argument("log", type=click.Path(path_type=Path))
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
@_SHOW_VALUES
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def prefix_command(
    log: Path,
    fmt: str | None,
    provider: str | None,
    tokenizer: str,
    show_values: bool,
    as_json: bool,
) -> None:
    """Replay a log through the provider's prompt cache: per request the tokens reused,
    written and uncached, the cause of every lost reuse, and what it cost.

    LOG is an HTTP log (JSONL, a folder of exchanges, HAR), a JSONL of request bodies with
    optional "ts" and "usage", or a Claude Code session (one request per assistant turn).

    \b
    Examples:
      ipse prefix captured/                     # a folder of exchanges
      ipse prefix requests.jsonl --provider vllm --json
      ipse prefix ~/.claude/projects/p/4d5611e5.jsonl
    """
    with terminal_progress(quiet=as_json):
        requests_log = read_requests(log, fmt)
        report = analyze(
            requests_log.requests,
            provider,
            tokenizer=tokenizer,
            progress=lambda items: progress(items, "replaying", total=len(requests_log.requests)),
            warnings=requests_log.warnings,
        )
    lifetime.keep(requests_log, report)
    if as_json:
        document = report.to_json()
        if show_values:
            for row, entry in zip(report.rows, document["requests"], strict=True):
                entry["value"] = row.cause.value if row.cause else None
        emit_json(document)
        return
    for line in report.warnings:
        warn(line)
    _render(report, show_values)


def _money(value: float) -> str:
    return f"${value:,.4f}"


def _render(report: PrefixReport, show_values: bool = False) -> None:
    out = console()
    names = ("#", "model", "read", "written", "uncached", "actual read", "agrees", "cause", "lost")
    columns = [(n, "left" if n in ("model", "cause", "agrees") else "right") for n in names]
    rows = [
        [
            str(row.index),
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
    summary = report.summary()
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
    from ipse.prefix._lint import lint  # (the linter's modules only for this command)

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
