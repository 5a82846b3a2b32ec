"""``ipse probe``: what a cut of a session keeps of what the agent used next, per strategy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from ipse._tokens import load_before
from ipse.cli._output import clean, console, emit_json, print_table, terminal_progress, warn
from ipse.transcript import FORMATS, load

LOST_SHOWN = 6  # lost facts listed per strategy and reason in text output (--json: all)
HANDOFFS = ("ipse", "ipse-no-notes", "ipse-budget", "compaction-summary")  # lost facts listed


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
    "--budget",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="Also score `ipse-budget` held to TOKENS at cuts where the agent CLI did not compact "
    "(at a compaction it is held to the summary's own tokens).",
)
@click.option(
    "--contexts",
    "contexts_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write each strategy's context text per cut to DIR/cut-N/STRATEGY.txt.",
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
    budget: int | None,
    contexts_dir: Path | None,
    model_url: str | None,
    api: str,
    model_name: str,
    judge_url: str | None,
    questions: int,
    as_json: bool,
) -> None:
    """Measure continuity: which facts the agent used after a cut each strategy keeps in its
    context, and which of the others a recall query formed from that context reaches.

    Facts (files changed, paths, commands and their exit status, errors, the human's rules,
    the open task) are extracted from the session before the cut; the demanded ones are those
    the session cites after it. Each strategy's context is scored: `none` (whole history),
    `ipse` (the handoff: tool traffic removed, every authored word, the marker and its ledger
    kept; what it removed is archived), `ipse-budget` (the same held to the compaction
    summary's tokens, or to --budget), `mask-N` (the last N tool results kept), `truncate`
    (oldest turns dropped to ipse's tokens), and `compaction-summary` (the agent CLI's own
    summary, at its compaction points; its archive is the transcript it names, if any).

    \b
    Kinds of fact:
      artifact    files created, edited, deleted or moved; commits; branches
      grit        the details work runs on: paths, file:line, URLs, `identifiers`,
                  numbers with units, test names, error names, commands (first line)
      constraint  the human's rules (never/don't/always/must/only...), state invariants
      task        the last request, and the agent's last stated next step

    \b
    Columns:
      tokens           the strategy's context, in o200k tokens
      in context       demanded facts whose exact string is in that context
      reachable        of the demanded facts not in context, those a recall query
                       formed from the context finds (top 5), in its archive;
                       never added to in context (- where it has no archive)
      lost             demanded facts neither in context nor reachable
      KIND in context/demanded   per kind: facts in context / demanded
      model score      with --model: the share of questions answered right
    The headline (after the cuts), per strategy, micro-averaged over facts:
      cuts             the cuts the strategy was scored at
      demanded         the demanded facts of those cuts, summed
      mean tokens      its context's tokens, averaged over those cuts
    At a compaction point, the targets: ipse and ipse-budget hold at least the
    summary's share in context (ipse-budget at no more tokens), and at least 80%
    of the facts not in context are reachable; what falls short is listed, with why.
    With --at every:K, per seam: tokens, no handoff (the history so far);
    tokens after ipse; authored chars kept; demanded; in context; reachable.

    \b
    Examples:
      ipse probe ~/.claude/projects/myproj/4d5611e5.jsonl
      ipse probe session.jsonl --at 120 --budget 2000 --contexts /tmp/ctx --json
      ipse probe rollout.jsonl --at every:20
      ipse probe s.jsonl --at 40 --model https://api.anthropic.com --api anthropic \\
        --model-name claude-sonnet-4-5
    """
    from ipse.probe import probe_session

    asking = _asking(model_url, api, model_name, judge_url, questions)
    with terminal_progress(quiet=as_json):
        load_before(file)
        source = load(file, fmt)
        document = probe_session(
            file, at, source=source, asking=asking, budget=budget, contexts=contexts_dir
        )
    if as_json:
        emit_json(document)
        return
    for line in source.warnings:
        warn(line)
    _render(document, contexts_dir)


def _asking(url: str | None, api: str, name: str, judge_url: str | None, questions: int) -> Any:
    """What ``--model`` asks (None without it)."""
    from ipse.probe._shared import Asker, Asking

    if url is None:
        return None
    judge = Asker(judge_url, api, name) if judge_url else None
    return Asking(Asker(url, api, name), judge, questions)


def _render(document: Mapping[str, Any], contexts_dir: Path | None) -> None:
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
    _render_headline(out, document["headline"])
    if contexts_dir is not None:
        out.print(f"contexts written to {clean(str(contexts_dir))}/cut-N/STRATEGY.txt")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _render_probe(out: Any, probe: Mapping[str, Any]) -> None:
    demanded = probe["demanded"]
    again = probe["rediscovery"]
    after = "" if probe["messages_after"] else " (the session ends here: only standing facts)"
    out.print(
        f"\ncut at message {probe['cut']} ({probe['kind']}){after}: {probe['facts']['total']} "
        f"facts before, {demanded['total']} demanded after ({demanded['standing']} standing); "
        f"re-discovery after: {again['files']} file re-reads, {again['commands']} command re-runs"
    )
    kinds = list(demanded["by_kind"])
    rows = [_row(s, kinds) for s in probe["strategies"]]
    columns = [("strategy", "left"), ("tokens", "right"), ("in context", "right")]
    columns += [("reachable", "right"), ("lost", "right")]
    columns += [(f"{kind} in context/demanded", "right") for kind in kinds]
    if any("model" in s for s in probe["strategies"]):
        columns.append(("model score", "right"))
    print_table(out, f"continuity at message {probe['cut']}", columns, rows)
    for s in probe["strategies"]:
        if s["name"] in HANDOFFS:
            _render_lost(out, s)
    if "targets" in probe:
        _render_targets(out, probe["targets"])


def _row(s: Mapping[str, Any], kinds: Sequence[str]) -> list[str]:
    cells = [
        s["name"],
        f"{s['tokens']:,}",
        _pct(s["in_context"]),
        _pct(s["reachable"]),
        str(len(s["lost"])),
    ]
    for kind in kinds:
        k = s["by_kind"].get(kind, {})
        cells.append(f"{k.get('in_context', 0)}/{k.get('demanded', 0)}")
    if "model" in s:
        cells.append(_pct(s["model"]["score"]))
    return cells


def _render_lost(out: Any, line: Mapping[str, Any]) -> None:
    """A strategy's lost facts, grouped by why."""
    by_why: dict[str, list[Mapping[str, Any]]] = {}
    for fact in line["lost"]:
        by_why.setdefault(fact.get("why", ""), []).append(fact)
    for why, facts in by_why.items():
        shown = ", ".join(
            clean(f"{f['sub']}: {f['value'][:80]}", one_line=True) for f in facts[:LOST_SHOWN]
        )
        more = len(facts) - LOST_SHOWN
        out.print(
            f"  {line['name']} lost {len(facts)} ({clean(why)}): {shown}"
            + (f" (+{more} more)" if more > 0 else "")
        )


def _render_targets(out: Any, point: Mapping[str, Any]) -> None:
    summary, ipse, held = point["summary"], point["ipse"], point["ipse-budget"]
    met = point["met"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    out.print(
        f"  targets: ipse {_pct(ipse['in_context'])} in context vs the summary's "
        f"{_pct(summary['in_context'])}: {verdict(met['ipse'])}; ipse-budget "
        f"{_pct(held['in_context'])} in {held['tokens']:,} tokens vs {summary['tokens']:,}: "
        f"{verdict(met['ipse-budget'])}; reachable (>= {point['reach_target']:g}% of the rest): "
        f"ipse {_pct(ipse['reachable'])}, ipse-budget {_pct(held['reachable'])}: "
        f"{verdict(met['reachable'])}"
    )
    for fact in point["short"]:
        where = f" ({fact['strategy']})" if "strategy" in fact else ""
        out.print(
            clean(
                f"    short of {fact['target']}{where}: {fact['sub']}: {fact['value'][:80]}: "
                f"{fact['why']}",
                one_line=True,
            )
        )
    more = point["short_total"] - len(point["short"])
    if more > 0:
        out.print(f"    (+{more} more: --json lists them)")


def _render_headline(out: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    cells = [
        [
            r["name"],
            str(r["cuts"]),
            str(r["demanded"]),
            _pct(r["in_context"]),
            _pct(r["reachable"]),
            f"{r['tokens']:,}",
        ]
        for r in rows
    ]
    columns = [("strategy", "left"), ("cuts", "right"), ("demanded", "right")]
    columns += [("in context", "right"), ("reachable", "right"), ("mean tokens", "right")]
    out.print()
    print_table(out, "headline: every cut's facts together (micro-averaged)", columns, cells)


def _render_seams(out: Any, seams: Mapping[str, Any]) -> None:
    rows = [
        [
            str(p["cut"]),
            f"{p['tokens_before']:,}",
            f"{p['tokens_after']:,}",
            f"{p['authored_chars']:,}",
            str(p["demanded"]),
            _pct(p["in_context"]),
            _pct(p["reachable"]),
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
        ("reachable", "right"),
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
