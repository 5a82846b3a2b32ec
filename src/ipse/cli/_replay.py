"""``ipse prefix LOG``: the replay and what it prints, without the command-line framework.

The click command (`ipse.cli.prefix`) and the executable's fast path (`ipse.cli._fast_prefix`)
both run `replay` and `show`, so the fast answer is the full one by construction: they differ
only in how a line reaches the stream (click's ``echo`` or a plain write, the same bytes for
text without terminal escapes) and, when stdout is not a terminal, in the console (rich's or
`ipse.cli._fast_prefix.PlainConsole`, which prints what rich would and hands rich anything
it is not sure of).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ipse.cli._output import print_table, progress
from ipse.errors import CheckFailed, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from ipse.prefix import PrefixReport
    from ipse.prefix._shared import RequestLog


def replay(
    log: Path, fmt: str | None, provider: str | None, tokenizer: str, min_tokens: int
) -> tuple[RequestLog, PrefixReport]:
    """Read ``log`` and replay its requests through the provider's cache."""
    from ipse.prefix import analyze, read_requests

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
    return requests_log, report


def show(
    report: PrefixReport,
    show_values: bool,
    as_json: bool,
    fail_over: tuple[float, bool] | None,
    out: Callable[[], Any],
    emit_json: Callable[[Any], None],
    warn: Callable[[str], None],
) -> None:
    """Print the report (``--json``: one document from ``emit_json``; else the warnings through
    ``warn`` and the text on the console ``out()`` makes), then apply ``--fail-over``'s gate."""
    summary = report.summary()
    if as_json:
        document = report.to_json(summary)
        if show_values:
            for row, entry in zip(report.rows, document["requests"], strict=True):
                entry["value"] = row.cause.value if row.cause else None
        emit_json(document)
    else:
        for line in report.warnings:
            warn(line)
        render(out(), report, show_values, summary)
    if fail_over is not None:
        gate(summary, *fail_over)


def limit(text: str) -> tuple[float, bool]:
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


def gate(summary: dict[str, Any], limit: float, percent: bool) -> None:
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


def render(
    out: Any, report: PrefixReport, show_values: bool = False, summary: dict[str, Any] | None = None
) -> None:
    """The human report on ``out`` (a `console`, or a plain one that draws its own tables)."""
    _render_table(out, report)
    _render_causes(out, report, show_values)
    summary = summary if summary is not None else report.summary()
    _render_totals(out, summary)
    _render_handoffs(out, report)
    _render_basis(out, summary)


def _render_handoffs(out: Any, report: PrefixReport) -> None:
    """The handoffs ipse made (the proxy's record says so), one line each, whatever their loss."""
    for row in report.rows:
        if row.handoff is not None:  # the proxy's record: its handoff was made at this request
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
    title = f"prefix cache ({report.provider})"
    draw = getattr(out, "table", None)  # (a plain console draws its own)
    if draw is not None:
        draw(title, columns, rows)
    else:
        print_table(out, title, columns, rows)


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
    """The hit rate and the costs, then the loss per cause, compaction, cold starts, agents,
    conversations."""
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
    groups = [
        ("agent", summary.get("by_agent", {})),
        ("conversation", summary.get("by_conversation", {})),
    ]
    for label, by in groups:
        for name, entry in by.items():
            out.print(
                f"  {label} {name}: {entry['requests']} request(s), cost "
                f"{_money(entry['cost_usd'])}, lost {entry['tokens_lost']:,} tokens, "
                f"{_money(entry['cost_lost_usd'])}"
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


__all__ = ["gate", "limit", "render", "replay", "show"]
