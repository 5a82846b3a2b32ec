"""``ipse replay``: a recorded session through the autopilot offline, both sides priced."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ipse.cli._output import console, emit_json, print_table, terminal_progress, warn
from ipse.transcript import FORMATS


@click.command("replay")
@click.argument("sessions", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--autopilot",
    "--policy",
    "policy",
    type=click.Choice(["off", "nudge", "cut"]),
    default="cut",
    show_default=True,
    help="The autopilot's mode, as `ipse proxy --autopilot`: off (nothing), nudge (nudges "
    "only), cut (nudges, then cuts).",
)
@click.option(
    "--autopilot-soft",
    "soft",
    type=int,
    metavar="TOKENS",
    help="The soft threshold (a nudge from here). Default: where a cut pays back.",
)
@click.option(
    "--autopilot-hard",
    "hard",
    type=int,
    metavar="TOKENS",
    help="The hard threshold (a cut from here, nudged or not). Default: a margin below the "
    "compaction point.",
)
@click.option(
    "--window",
    type=click.IntRange(1),
    metavar="TOKENS",
    help="The model's context window. Default: the window table's for the session's model.",
)
@click.option(
    "--compact-at",
    type=click.IntRange(1),
    metavar="TOKENS",
    help="Where the agent CLI compacts. Default: its rule for the window, and no higher than "
    "where the session itself compacted.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Name the input format instead of detecting it.",
)
@click.option("--no-probe", is_flag=True, help="Do not measure continuity at the cuts.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def replay_command(
    sessions: tuple[Path, ...],
    policy: str,
    soft: int | None,
    hard: int | None,
    window: int | None,
    compact_at: int | None,
    fmt: str | None,
    no_probe: bool,
    as_json: bool,
) -> None:
    """What the autopilot would have done to recorded sessions, and what it would have cost.

    Each session's requests (a Claude Code session with its sub-agents, a Codex rollout, a
    log of requests such as the proxy's record) go through the autopilot's policy at their
    recorded times, as the proxy would have forwarded them; both sides are priced with the
    provider's cache rules (5-minute and 1-hour writes, reads, expiry over idle gaps) at the
    model's prices. The conversation is what lies above the fixed front (system prompt,
    tools), which no handoff touches; the whole bill counts the front and the output too.

    \b
    Rows: the session as recorded; as the cache model prices it; with the policy (never sent,
    so the model's). The ratio is the policy's over the model's session, and the bill with the
    policy at the recorded prices is the recorded bill times it.

    \b
    Columns:
      input $          billed input
      conversation $   the input above the fixed front
      bill $           input and output
      written / read   cache writes and reads, tokens
      peak / mean      the requests' input tokens
      above limit      requests larger than the agent CLI's compaction point
    At each cut: the tokens before and after it, and what it keeps of the facts the agent used
    next (`ipse probe`: in context, and reachable from the archive). Where the session
    compacted, the agent CLI's own summary at that point is scored the same way.

    \b
    Examples:
      ipse replay ~/.claude/projects/myproj/4d5611e5.jsonl
      ipse replay rollout.jsonl --autopilot-hard 60000 --json
      ipse replay sessions/*.jsonl --policy nudge
    """
    from ipse.handoff._shared import AutopilotPolicy
    from ipse.replay import ReplayOptions

    options = ReplayOptions(
        policy=AutopilotPolicy(mode=policy, soft=soft, hard=hard),  # type: ignore[arg-type]
        window=window,
        compaction=compact_at,
        continuity=not no_probe,
    )
    with terminal_progress(quiet=as_json):
        documents = [_replay(path, fmt, options) for path in sessions]
    if as_json:
        emit_json(documents[0] if len(documents) == 1 else {"sessions": documents})
        return
    out = console()
    if len(documents) == 1:
        _render_one(out, documents[0])
    else:
        _render_many(out, documents)


def _replay(path: Path, fmt: str | None, options: Any) -> dict[str, Any]:
    """One session's document; the agent CLI's compaction rule from the session's format
    unless ``--compact-at`` names the point."""
    from dataclasses import replace

    from ipse.agents._shared import compaction_rule
    from ipse.prefix import read_requests
    from ipse.replay import document, replay_log

    log = read_requests(path, fmt)
    if options.compaction is None:
        options = replace(options, compaction=compaction_rule(log.format))
    return document(replay_log(log, options, session=path, format=fmt))


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def _side_row(name: str, side: dict[str, Any]) -> list[str]:
    return [
        name,
        f"{side['requests']:,}",
        _money(side["input_usd"]),
        _money(side["conversation_usd"]),
        _money(side["bill_usd"]),
        f"{side['cache_write_tokens']:,}",
        f"{side['cache_read_tokens']:,}",
        f"{side['peak_tokens']:,}",
        f"{side['mean_tokens']:,}",
        f"{side['above_limit']:,}",
    ]


def _render_one(out: Any, doc: dict[str, Any]) -> None:
    for line in doc["notes"]:
        warn(line)
    out.print(
        f"{doc['session']}  ({doc['format']}, {doc['requests']['recorded']:,} requests; "
        f"policy {doc['policy']['mode']})",
        style="bold",
    )
    for line in doc["lines"]:
        out.print(
            f"  {line['conversation'] or 'conversation'}: {line['requests']:,} requests, "
            f"compaction point {line['limit']:,} tokens, hard threshold "
            f"{line['hard']:,}" + (f", soft {line['soft']:,}" if line["soft"] else "")
        )
    columns = [("side", "left"), ("requests", "right"), ("input $", "right")]
    columns += [("conversation $", "right"), ("bill $", "right"), ("written", "right")]
    columns += [("read", "right"), ("peak", "right"), ("mean", "right")]
    columns += [("above limit", "right")]
    rows = [
        _side_row("recorded", doc["recorded"]),
        _side_row("recorded, as modelled", doc["recorded_as_modelled"]),
        _side_row("with policy, as modelled", doc["with_policy"]),
    ]
    print_table(out, "billed, as recorded and with the policy", columns, rows)
    ratio, priced = doc["ratio"], doc["with_policy_at_recorded"]
    out.print(
        f"with the policy: conversation {_times(ratio['conversation'])} "
        f"({_money(doc['recorded']['conversation_usd'])} recorded, "
        f"{_money(priced['conversation_usd'])} at the recorded prices), input "
        f"{_times(ratio['input'])}, whole bill {_money(doc['recorded']['bill_usd'])} recorded, "
        f"{_money(priced['bill_usd'])} with it ({_times(ratio['bill'])}); {doc['nudges']} "
        f"nudge(s), {len(doc['cuts'])} cut(s), "
        f"{len(doc['requests']['compaction_calls_dropped'])} compaction call(s) not made"
    )
    _render_cuts(out, doc["cuts"])
    for c in doc["compactions"]:
        summary, ipse = c["summary"] or {}, c["ipse"] or {}
        out.print(
            f"the agent CLI compacted at message {c['message']}: its summary keeps "
            f"{_pct(summary.get('in_context'))} of the {c['demanded']} facts used next in "
            f"context; ipse there keeps {_pct(ipse.get('in_context'))} "
            f"({_pct(ipse.get('reachable'))} of the rest reachable; the summary's "
            f"{_pct(summary.get('reachable'))})"
        )
    _render_targets(out, doc)


def _render_cuts(out: Any, cuts: Sequence[dict[str, Any]]) -> None:
    if not cuts:
        return
    rows = []
    for c in cuts:
        kept = c["continuity"] or {}
        rows.append(
            [
                str(c["conversation"] or "-"),
                "-" if c["request"] is None else str(c["request"]),
                f"{c['tokens_before']:,}",
                f"{c['tokens_after']:,}",
                f"{c['removed_calls']:,}",
                _pct(kept.get("in_context")),
                _pct(kept.get("reachable")),
            ]
        )
    columns = [("conversation", "left"), ("request", "right"), ("tokens before", "right")]
    columns += [("after", "right"), ("calls removed", "right"), ("in context", "right")]
    columns += [("reachable", "right")]
    print_table(out, "cuts", columns, rows)


def _render_targets(out: Any, doc: dict[str, Any]) -> None:
    targets = doc["targets"]
    said = {True: "met", False: "missed", None: "-"}
    out.print(
        "targets: conversation at most half "
        f"{said[targets['conversation_at_most_half']]}, bill not above the recorded "
        f"{said[targets['bill_not_above_recorded']]}, no request above the compaction point "
        f"{said[targets['no_request_above_limit']]}, continuity at least the summary's "
        f"{said[targets['continuity_at_least_summary']]}"
    )
    for reason in doc["why"]:
        out.print(f"why: {reason['reason']}: {reason['detail']}")


def _render_many(out: Any, documents: Sequence[dict[str, Any]]) -> None:
    rows = []
    for doc in documents:
        recorded, policy, ratio = doc["recorded"], doc["with_policy_at_recorded"], doc["ratio"]
        sizes = doc["with_policy"]
        kept = [c["continuity"]["in_context"] for c in doc["cuts"] if c["continuity"]]
        summaries = [c["summary"]["in_context"] for c in doc["compactions"] if c["summary"]]
        rows.append(
            [
                Path(doc["session"]).name,
                f"{doc['requests']['recorded']:,}",
                f"{_money(recorded['conversation_usd'])} / {_money(policy['conversation_usd'])}",
                _times(ratio["conversation"]),
                f"{_money(recorded['bill_usd'])} / {_money(policy['bill_usd'])}",
                f"{recorded['peak_tokens']:,} / {sizes['peak_tokens']:,}",
                f"{doc['nudges']} / {len(doc['cuts'])}",
                _pct(min(kept)) if kept else "-",
                _pct(min(summaries)) if summaries else "-",
                "; ".join(r["reason"] for r in doc["why"]) or "-",
            ]
        )
    columns = [("session", "left"), ("requests", "right")]
    columns += [("conversation $ rec / policy", "right"), ("ratio", "right")]
    columns += [("bill $ rec / policy", "right"), ("peak rec / policy", "right")]
    columns += [("nudges / cuts", "right"), ("in context at cuts", "right")]
    columns += [("summary's", "right"), ("why not 0.5x", "left")]
    print_table(out, "replayed with the autopilot", columns, rows)
