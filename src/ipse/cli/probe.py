"""``ipse probe``: what a cut of a session keeps of what the agent used next, per strategy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ipse.cli._output import clean, console, emit_json, print_table, terminal_progress, warn
from ipse.tokens import load_before
from ipse.transcript import FORMATS, load

LOST_SHOWN = 8  # lost facts listed per strategy in text output (--json lists them all)


@click.command("probe")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--at",
    "at",
    help="Where to cut: a message index N, `checkpoint` (after the last checkpoint call, else at "
    "the agent CLI's compactions) or `every:K` (a handoff every K agent turns). Default: at every "
    "compaction and at a quarter, half and three quarters of the session.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Name the input format instead of detecting it.",
)
@click.option(
    "--model",
    "model_url",
    metavar="URL",
    help="Also ask a model questions from the demanded facts with each strategy's context.",
)
@click.option(
    "--api",
    type=click.Choice(["anthropic", "openai"]),
    default="openai",
    show_default=True,
    help="The API shape of --model and --judge.",
)
@click.option("--model-name", default="default", show_default=True, help="The model to ask for.")
@click.option("--judge", "judge_url", metavar="URL", help="A model that grades free answers.")
@click.option(
    "--questions",
    type=click.IntRange(0, 100),
    default=8,
    show_default=True,
    help="Recall questions per cut (plus one per other kind).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def probe_command(
    file: Path,
    at: str | None,
    fmt: str | None,
    model_url: str | None,
    api: str,
    model_name: str,
    judge_url: str | None,
    questions: int,
    as_json: bool,
) -> None:
    """Measure continuity: which facts the agent used after a cut each strategy keeps.

    Facts (files changed, paths, commands and their exit status, errors, the human's rules,
    the open task) are extracted from the session before the cut; the demanded ones are those
    the session cites after it. Each strategy's context is scored: `none` (whole history),
    `ipse` (micro-handoff; what it removed is recallable from the archive), `mask-N` (the last
    N tool results kept), `truncate` (oldest turns dropped to ipse's tokens), and
    `compaction-summary` (the agent CLI's own summary, at its compaction points).

    \b
    Kinds of fact:
      artifact    files created, edited, deleted or moved; commits; branches
      grit        the details work runs on: paths, file:line, URLs, `identifiers`,
                  numbers with units, test names, error names, commands (exit status)
      constraint  the human's rules (never/don't/always/must/only...), state invariants
      task        the last request, and the agent's last stated next step

    \b
    Columns:
      tokens           the strategy's context, in o200k tokens
      in context       demanded facts whose exact string is in that context
      recallable       demanded facts not in it, but in ipse's archive (recall)
      lost             demanded facts neither in it nor recallable
      KIND kept+recall/demanded   per kind: in context + recallable / demanded
      model score      with --model: the share of questions answered right
    With --at every:K, per seam: tokens, no handoff (the history so far);
    tokens after ipse; authored chars kept; demanded; in context; + recallable.

    \b
    Examples:
      ipse probe ~/.claude/projects/myproj/4d5611e5.jsonl
      ipse probe session.jsonl --at 120 --json
      ipse probe rollout.jsonl --at every:20
      ipse probe s.jsonl --at 40 --model https://api.anthropic.com --api anthropic \\
        --model-name claude-sonnet-4-5
    """
    from ipse.probe import Asker, Asking, probe_session

    asking = None
    if model_url is not None:
        asker = Asker(model_url, api, model_name)
        judge = Asker(judge_url, api, model_name) if judge_url else None
        asking = Asking(asker, judge, questions)

    with terminal_progress(quiet=as_json):
        load_before(file)
        source = load(file, fmt)
        document = probe_session(file, at, source=source, asking=asking)
    if as_json:
        emit_json(document)
        return
    for line in source.warnings:
        warn(line)
    out = console()
    out.print(
        f"{document['session']}  ({document['format']}, {document['messages']} messages, "
        f"compactions at {document['compactions'] or 'none'}; tokens: {document['tokenizer']})",
        style="bold",
    )
    if "model" in document:
        out.print(f"with a model: {document['model']['caveat']}", style="yellow")
    if "seams" in document:
        _render_seams(out, document["seams"])
        return
    for probe in document["probes"]:
        _render_probe(out, probe)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _render_probe(out: Any, probe: dict[str, Any]) -> None:
    demanded = probe["demanded"]
    again = probe["rediscovery"]
    out.print(
        f"\ncut at message {probe['cut']} ({probe['kind']}): {probe['facts']['total']} facts "
        f"before, {demanded['total']} demanded after ({demanded['standing']} standing); "
        f"re-discovery after: {again['files']} file re-reads, {again['commands']} command re-runs"
    )
    kinds = list(demanded["by_kind"])
    rows = []
    for s in probe["strategies"]:
        cells = [
            s["name"],
            f"{s['tokens']:,}",
            _pct(s["in_context"]),
            _pct(s["recallable"]),
            str(len(s["lost"])),
        ]
        for kind in kinds:
            k = s["by_kind"].get(kind, {})
            cells.append(
                f"{k.get('in_context', 0)}+{k.get('recallable', 0)}/{k.get('demanded', 0)}"
            )
        if "model" in s:
            cells.append(_pct(s["model"]["score"]))
        rows.append(cells)
    columns = [("strategy", "left"), ("tokens", "right"), ("in context", "right")]
    columns += [("recallable", "right"), ("lost", "right")]
    columns += [(f"{kind} kept+recall/demanded", "right") for kind in kinds]
    if any("model" in s for s in probe["strategies"]):
        columns.append(("model score", "right"))
    print_table(out, f"continuity at message {probe['cut']}", columns, rows)
    for s in probe["strategies"]:
        if s["lost"]:
            shown = ", ".join(
                clean(f"{f['sub']}: {f['value'][:80]}", one_line=True)
                for f in s["lost"][:LOST_SHOWN]
            )
            more = len(s["lost"]) - LOST_SHOWN
            out.print(f"  {s['name']} lost: {shown}" + (f" (+{more} more)" if more > 0 else ""))


def _render_seams(out: Any, seams: dict[str, Any]) -> None:
    rows = [
        [
            str(p["cut"]),
            f"{p['tokens_before']:,}",
            f"{p['tokens_after']:,}",
            f"{p['authored_chars']:,}",
            str(p["demanded"]),
            _pct(p["in_context"]),
            _pct(p["kept_or_recallable"]),
        ]
        for p in seams["seams"]
    ]
    columns = [
        ("seam", "right"),
        ("tokens, no handoff", "right"),
        ("tokens after ipse", "right"),
        ("authored chars", "right"),
        ("demanded", "right"),
        ("in context", "right"),
        ("+ recallable", "right"),
    ]
    print_table(out, f"a handoff every {seams['every']} turns", columns, rows)
    requests = seams["requests"]
    if requests:
        peak = max(r["tokens"] for r in requests)
        plain = max(r["tokens_without_handoff"] for r in requests)
        total = sum(r["tokens"] for r in requests)
        total_plain = sum(r["tokens_without_handoff"] for r in requests)
        out.print(
            f"{len(requests)} requests: peak {peak:,} tokens with handoffs, {plain:,} without; "
            f"sum {total:,} vs {total_plain:,} (history tokens sent, all requests)"
        )
