"""The page: one self-contained HTML document with inline CSS and SVG, and no script.

Nothing is fetched: no fonts, styles, scripts or images from anywhere, so the page reads the same
when mailed, archived or opened offline years later. Every chart is followed by the table of the
numbers it draws (copyable, readable by a screen reader). All text from the input is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from ipse import __version__
from ipse._redact import redact
from ipse.report._continuity import SHOWN
from ipse.report._data import CONTEXT_KINDS, HandoffSaving, Point, ReportData
from ipse.report._svg import Series, legend, line_chart, stacked_bars

_NAMES = {
    "not_recorded": "not recorded (system prompt, tools)",
    "system": "system prompt",
    "tools": "tool definitions",
    "human_text": "human text",
    "agent_text": "agent text",
    "harness_text": "harness text",
    "tool_calls": "tool calls",
    "tool_results": "tool results",
    "thinking": "thinking",
    "other": "other blocks",
}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1000px;
color:#1d232a;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2.2rem}
.meta,.note{color:#59636e}.chart{width:100%;height:auto;background:#fbfcfd;border:1px solid #e4e8ec}
.grid{stroke:#e4e8ec}.axis{font-size:11px;fill:#59636e}.line{fill:none;stroke:#2b6cb0;stroke-width:1.5}
.point{fill:#2b6cb0}.marker{stroke-width:1.5;stroke-dasharray:4 3}.marker.compaction{stroke:#b7791f}
.marker.handoff{stroke:#2f855a}.marker.autopilot{stroke:#2b6cb0}.marker.reset{stroke:#c53030}
.k-not_recorded{fill:#e2e8f0}.k-system{fill:#a0aec0}.k-tools{fill:#cbd5e0}.k-human_text{fill:#3182ce}.k-agent_text{fill:#63b3ed}
.k-harness_text{fill:#90cdf4}.k-tool_calls{fill:#dd6b20}.k-tool_results{fill:#f6ad55}
.k-thinking{fill:#9f7aea}.k-other{fill:#718096}
.c-read{fill:#38a169}.c-write{fill:#d69e2e}.c-uncached{fill:#e53e3e}
.legend .key{margin-right:1rem;white-space:nowrap}
table{border-collapse:collapse;margin:.6rem 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e4e8ec;padding:.2rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}td.text{text-align:left}
.cards{display:flex;flex-wrap:wrap;gap:.8rem}.card{border:1px solid #e4e8ec;padding:.5rem .8rem}
.card b{display:block;font-size:1.2rem}details{margin:.6rem 0}
code{background:#f1f3f5;padding:0 .25rem}
"""


def render(data: ReportData) -> str:
    """The whole HTML document."""
    points = data.points
    labels = [_label(p) for p in points]
    sections = [
        _header(data),
        _context_section(points, labels),
        _composition_section(data, labels),
        _cache_section(data, labels),
        _handoff_section(data),
        _bill_section(data.source),
        _numbers_section(points),
        f'<p class="note">Made by <code>{escape(data.command)}</code> with ipse {__version__}.</p>',
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>ipse report: {escape(data.source)}</title><style>{_CSS}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _label(point: Point) -> str:
    cause = f", lost reuse: {point.cause}" if point.cause else ""
    return (
        f"request {point.index}: {point.context_tokens:,} tokens, read {point.cache_read:,}, "
        f"written {point.cache_write:,}, uncached {point.uncached:,} ({point.cache_source}){cause}"
    )


def _header(data: ReportData) -> str:
    summary = data.summary
    if data.no_requests:
        return (
            f'<h1>Where the tokens went</h1><p class="meta">{escape(data.source)} · '
            f"{escape(data.format)} · tokens counted by {escape(data.tokens_by)}</p>"
            f'<p class="note">{escape(data.no_requests)}.</p>'
            + "".join(f"<li>{escape(w)}</li>" for w in data.warnings)
        )
    cards = [
        ("requests", f"{summary.get('requests', len(data.points)):,}"),
        ("cache hit rate", f"{100 * float(summary.get('hit_rate', 0.0)):.1f}%"),
        ("input cost", f"${float(summary.get('cost_usd', 0.0)):,.2f}"),
        ("lost to cache misses", f"${float(summary.get('cost_lost_usd', 0.0)):,.2f}"),
        ("best handoff would save", _best_saving(data.checkpoints)),
    ]
    saved = _replay_card(data.replay)
    warnings = "".join(f"<li>{escape(w)}</li>" for w in data.warnings)
    return (
        f'<h1>Where the tokens went</h1><p class="meta">{escape(data.source)} · '
        f"{escape(data.format)} · provider {escape(data.provider)} · tokens counted by "
        f'{escape(data.tokens_by)}</p><div class="cards">'
        + "".join(f'<div class="card">{escape(k)}<b>{escape(v)}</b></div>' for k, v in cards)
        + saved
        + "</div>"
        + (f'<ul class="note">{warnings}</ul>' if warnings else "")
    )


def _replay_card(replay: Mapping[str, Any] | None) -> str:
    """The "what ipse would have saved" card: the whole bill less the bill with the autopilot
    (``ipse replay``), its share, and how it was had (on hover)."""
    if replay is None:
        return ""
    saved = float(replay["saved_usd"])
    recorded = float(replay["bill_recorded_usd"])
    value = "nothing" if saved <= 0 else f"${saved:,.2f}"
    if saved > 0 and recorded > 0:
        value += f" ({saved / recorded:.0%})"
    title = (
        f"ipse replay, autopilot {replay['policy']}: the bill ${recorded:,.2f} as recorded, "
        f"${float(replay['bill_with_policy_usd']):,.2f} with the autopilot "
        f"({replay['cuts']} cuts, {replay['nudges']} nudges)"
    )
    return (
        f'<div class="card" id="replay" title="{escape(title)}">what ipse would have saved'
        f"<b>{escape(value)}</b></div>"
    )


def _best_saving(checkpoints: Sequence[HandoffSaving]) -> str:
    if not checkpoints:
        return "-"
    best = max(checkpoints, key=lambda c: c.saved_usd)
    return f"${best.saved_usd:,.2f}"


def _context_section(points: Sequence[Point], labels: Sequence[str]) -> str:
    markers = {p.index: p.marker for p in points if p.marker}
    positions = {p.index: i for i, p in enumerate(points)}
    chart = line_chart(
        "Context size per request (tokens)",
        [p.context_tokens for p in points],
        {positions[i]: kind for i, kind in markers.items()},
        labels,
    )
    counts = {
        kind: sum(1 for k in markers.values() if k == kind)
        for kind in ("compaction", "handoff", "autopilot", "reset")
    }
    named = {"autopilot": "autopilot cut"}  # (the proxy's own, apart from the agent's handoffs)
    note = ", ".join(
        f"{n} {named.get(kind, kind)}{'s' if n != 1 else ''}" for kind, n in counts.items()
    )
    return (
        f'<h2 id="context">Context size</h2>{chart}<p class="note">Marked: {note} '
        "(a handoff an ipse proxy made, as its record says, whatever its size; otherwise the "
        "context shrank by 30% or more before the marked request).</p>"
    )


def _composition_section(data: ReportData, labels: Sequence[str]) -> str:
    points = data.points
    layers = [
        Series(_NAMES[kind], f"k-{kind}", [p.composition.get(kind, 0) for p in points])
        for kind in CONTEXT_KINDS
        if any(p.composition.get(kind, 0) for p in points)
    ]
    chart = stacked_bars("What fills the context, per request (tokens)", layers, labels)
    tools = _table(
        ["tool", "tokens in the last request (calls and results)"],
        [[name, f"{tokens:,}"] for name, tokens in data.top_tools],
    )
    unrecorded = any(p.composition.get("not_recorded", 0) for p in points)
    note = (
        '<p class="note">The input does not record everything a request sent (a session file '
        "holds no system prompt or tool definitions, a rollout no tool definitions): "
        "<em>not recorded</em> is what the recorded usage holds beyond what the input shows.</p>"
        if unrecorded
        else ""
    )
    return (
        f'<h2 id="composition">What fills the context</h2>{chart}{legend(layers)}{note}'
        f"<h3>Top tools</h3>{tools}"
    )


def _cache_section(data: ReportData, labels: Sequence[str]) -> str:
    points = data.points
    if data.no_requests:
        return (
            '<h2 id="cache">Prompt cache</h2><p class="note">Nothing to show: the prompt cache '
            f"needs the requests as sent, and a {escape(data.format)} file does not record "
            "them.</p>"
        )
    layers = [
        Series("read from cache", "c-read", [p.cache_read for p in points]),
        Series("written to cache", "c-write", [p.cache_write for p in points]),
        Series("uncached", "c-uncached", [p.uncached for p in points]),
    ]
    chart = stacked_bars("Prompt cache per request (input tokens)", layers, labels)
    recorded = sum(1 for p in points if p.cache_source == "recorded")
    lost = [p for p in points if p.cause]
    rows = [
        [
            str(p.index),
            p.cause or "",
            p.cause_detail or "",
            f"{p.lost_tokens:,}",
            f"${p.cost_lost_usd:,.4f}",
        ]
        for p in sorted(lost, key=lambda p: -p.cost_lost_usd)[:50]
    ]
    by_cause = data.summary.get("by_cause", {})
    totals = _table(
        ["cause", "requests", "tokens lost", "cost"],
        [
            [k, f"{v['requests']:,}", f"{v['tokens_lost']:,}", f"${v['cost_lost_usd']:,.4f}"]
            for k, v in by_cause.items()
        ],
    )
    return (
        f'<h2 id="cache">Prompt cache</h2>{chart}{legend(layers)}<p class="note">{recorded} of '
        f"{len(points)} requests have recorded usage; the others are the cache model's "
        "prediction.</p><h3>Lost reuse by cause</h3>"
        + totals
        + "<h3>Costliest lost reuse</h3>"
        + _table(["request", "cause", "where", "tokens lost", "cost"], rows, text_columns=(2,))
    )


def _handoff_section(data: ReportData) -> str:
    if data.no_requests:
        return (
            '<h2 id="handoff">Micro-handoff</h2><p class="note">Nothing to show: what a handoff '
            "would save is counted over the requests that follow it, and a "
            f"{escape(data.format)} file does not record them.</p>"
        )
    best = sorted(data.checkpoints, key=lambda c: -c.saved_usd)[:SHOWN]
    rows = [
        [
            str(c.index),
            f"{c.tokens_now:,}",
            f"{c.removable:,}",
            f"{c.later_requests:,}",
            _requests(c.break_even_turns) if c.break_even_turns is not None else "never",
            f"{c.saved_tokens:,}",
            f"${c.saved_usd:,.4f}",
            _kept_cell(c.continuity),
        ]
        for c in best
    ]
    handed = sum(1 for p in data.points if p.marker == "handoff")
    made = "".join(
        f"<li>at request {h.index} (cut at {escape(str(h.anchor))}): removed "
        f"{h.removed_calls} tool call(s), saved "
        f"{'-' if h.saved_tokens is None else format(h.saved_tokens, ',')} tokens</li>"
        for h in data.handoffs
    )
    return (
        '<h2 id="handoff">Micro-handoff</h2><p class="note">At each new human turn, a handoff '
        "would remove the tool calls, tool results and thinking before it. Savings are input "
        "tokens (at the base price) over the rest of the log, after the one cache write the "
        f"rewrite costs. Handoffs already in this input: {handed}.</p>"
        + (f'<ul class="note">{made}</ul>' if made else "")
        + _autopilot_list(data)
        + _table(
            [
                "at request",
                "context",
                "removable",
                "later requests",
                "pays back after",
                "saved tokens",
                "saved",
                "keeps / reachable",
            ],
            rows,
        )
        + _continuity_list(best)
    )


def _autopilot_list(data: ReportData) -> str:
    """The proxy's autopilot events, apart from the agent's own checkpoints."""
    if not data.autopilot:
        return ""
    items = []
    for a in data.autopilot:
        if a.action == "cut":
            items.append(
                f"<li>at request {a.index}: autopilot cut at {escape(str(a.anchor))}, "
                f"{_count(a.tokens)} &rarr; {_count(a.tokens_after)} tokens, cache cost "
                f"{_count(a.cache_cost)} tokens</li>"
            )
        else:
            items.append(f"<li>at request {a.index}: autopilot nudge at {_count(a.tokens)} "
                         "tokens</li>")  # fmt: skip
    return (
        '<p class="note">The proxy\'s autopilot (its nudges to checkpoint and its own cuts, '
        "not the agent's checkpoints):</p>"
        f'<ul class="note">{"".join(items)}</ul>'
    )


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):g}%"


def _kept_cell(continuity: Mapping[str, Any] | None) -> str:
    if continuity is None:
        return "-"
    return f"{_pct(continuity['in_context'])} / {_pct(continuity['reachable'])}"


def _continuity_list(checkpoints: Sequence[HandoffSaving]) -> str:
    """One line per probed checkpoint, in request order, its lost facts on hover (the line's
    title) and in a details element (listed for keyboards and print)."""
    items = []
    for c in sorted(checkpoints, key=lambda c: c.index):
        k = c.continuity
        if k is None:
            continue
        lost = [redact(f"{f['sub']}: {f['value']}") for f in k["lost"]]  # (the probe did too)
        more = k["lost_total"] - len(lost)
        if more > 0:
            lost.append(f"(+{more} more)")
        title = "lost: " + "; ".join(lost) if lost else "nothing the agent used next is lost"
        details = (
            f"<details><summary>{k['lost_total']} lost</summary><ul>"
            + "".join(f"<li>{escape(line)}</li>" for line in lost)
            + "</ul></details>"
            if lost
            else ""
        )
        items.append(
            f'<li title="{escape(title)}">At request {c.index} (message {k["cut"]} of the '
            f"session): a handoff here keeps {_pct(k['in_context'])} of what the agent used "
            f"next ({k['demanded']} facts), {_pct(k['reachable'])} of the rest is reachable by "
            f"a recall query formed from it, saves "
            f"{k['saved_tokens']:,} tokens{details}</li>"
        )
    if not items:
        return ""
    return (
        '<h3>What a handoff keeps</h3><p class="note">The facts of the session before each '
        "checkpoint (files changed, paths, commands, errors, the human's rules, the open task) "
        "that the agent cited after it: the share ipse's handoff keeps in context, the share of "
        "the others a recall query formed from that context finds in its archive, and the "
        "context tokens it saves (as <code>ipse probe "
        "--at N</code> measures; hover or open a line for what is lost).</p><ul>"
        + "".join(items)
        + "</ul>"
    )


def _bill_section(source: str) -> str:
    """What the input's calls were billed for, by model (`ipse.usage.bill_of`: each call once,
    sub-agents included); nothing for an input the bill is not read from."""
    from pathlib import Path

    from ipse.usage import bill_of, group, total

    ledger = bill_of(Path(source))
    if ledger is None or not ledger.rows:
        return ""
    buckets = group(ledger, "model")
    rows = [
        [b.label, f"{b.calls:,}", f"{b.input:,}", f"{b.write_5m:,}", f"{b.write_1h:,}",
         f"{b.read:,}", f"{b.output:,}", f"${b.cost:,.2f}"]
        for b in [*buckets, total(buckets)]
    ]  # fmt: skip
    head = ["model", "calls", "input", "write 5m", "write 1h", "read", "output", "cost"]
    return (
        '<section id="bill"><h2>The bill</h2><p class="note">Every billed call of this input '
        "once (sub-agents included), output too, at list prices; <code>ipse usage</code> gives "
        f"the same for every session.</p>{_table(head, rows, text_columns=(0,))}</section>"
    )


def _requests(count: int) -> str:
    return f"{count:,} request{'' if count == 1 else 's'}"


OPEN_TABLE_ROWS = 1000
"""Up to this many requests the table of numbers is shown open; a longer one starts closed."""


def _numbers_section(points: Sequence[Point]) -> str:
    kinds = [k for k in CONTEXT_KINDS if any(p.composition.get(k, 0) for p in points)]
    head = [
        "request",
        "model",
        "context",
        "read",
        "written",
        "uncached",
        "source",
        "cause",
        *(_NAMES[k] for k in kinds),
    ]
    rows = [
        [
            str(p.index),
            p.model or "",
            f"{p.context_tokens}",
            f"{p.cache_read}",
            f"{p.cache_write}",
            f"{p.uncached}",
            p.cache_source,
            p.cause or "",
            *(str(p.composition.get(k, 0)) for k in kinds),
        ]
        for p in points
    ]
    # a long table is parsed but not laid out until it is opened: a 10,000-request page stays fast
    opened = " open" if len(points) <= OPEN_TABLE_ROWS else ""
    return (
        f'<section id="numbers"><h2>The numbers behind the charts</h2><details{opened}><summary>'
        f"{len(points)} requests</summary>"
        + _table(head, rows, text_columns=(1,))
        + "</details></section>"
    )


def _table(
    head: Sequence[str], rows: Iterable[Sequence[str]], text_columns: Sequence[int] = ()
) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="text">{escape(c)}</td>' if i in text_columns else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


__all__ = ["render"]
