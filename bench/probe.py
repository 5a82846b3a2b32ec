"""Continuity on every shared session: what each strategy keeps of the facts the agent used next,
at the session's own compaction points and at three cuts (a quarter, half and three quarters of
its valid cuts), the targets at every compaction point, the sawtooth of a handoff every K turns
on the longest session (in tokens), and how often to hand off: K swept over 5, 10, 20, 40.

Per cut: the demanded facts (cited after the cut, plus the standing rules and open task),
re-discovery after the cut (file re-reads / command re-runs), and per strategy the share of
demanded facts in context, the share of the others reachable by a recall query formed from the
context (`ipse probe`'s rule; `-` where a strategy has no archive), and tokens (o200k). Then
the headline per strategy, micro-averaged over every demanded fact of every cut it was scored at
(a cut with 40 facts weighs four times one with 10), and at each compaction point the targets:
ipse's in-context share at least the summary's, ``ipse-budget``'s too at no more tokens, and at
least 80% of the facts not in context reachable, with the facts behind any that is missed.

No shared session compacts more than once, so one is generated from the shared Claude Code
session that compacted (``--no-generated`` leaves it out): its messages as they are, its real
compaction where it was, and two more before the agent's requests nearest a quarter and three
quarters of its records (after a tool result, as Claude Code compacts mid-turn), whose
"summary" is a stand-in made by a stated rule: the newest of the human's and the agent's texts,
in order, within the real summary's tokens, the transcript named as Claude Code names it. Its
points are marked ``generated``: they exercise several compactions and hold a summary that is
recent narration, which is no agent CLI's summary, so they are reported apart from the real
points and prove nothing about the targets.

Speed, for scale only: the probe of all cuts of a session against reading that session (the
baseline, in the same run).

    python bench/probe.py [--every K] [--budget TOKENS] [--data DIR] [--no-generated]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from ipse._tokens import default_counter
from ipse.probe import probe_session, timeline
from ipse.probe._best import best_cut, continuity
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._reach import Reach
from ipse.probe._strategies import Meter
from ipse.probe._targets import headline
from ipse.transcript import load

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()
SWEEP = (5, 10, 20, 40)
SHOWN = (
    "none",
    "ipse",
    "ipse-budget",
    "mask-3",
    "mask-10",
    "truncate",
    "compaction-summary",
)
COMPACTED = "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"  # the shared session that compacted
REDACTION = re.compile(r"\[REDACTED_[A-Z]+ len=\d+ sha=[0-9a-f]+\]")
OPENING = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)


def sessions(data: Path) -> list[Path]:
    found = sorted((data / "claude-code").glob("*.jsonl"))
    found += sorted((data / "codex").glob("*.jsonl"))
    found += sorted((data / "openai-chat").glob("*.json"))
    return found


def cell(score: Mapping[str, Any] | None) -> str:
    if score is None:
        return "-"
    kept, reach = score["in_context"], score["reachable"]
    if kept is None:
        return f"  n/a {score['tokens']:>7,}"
    back = "   -" if reach is None else f"{reach:>3.0f}%"
    return f"{kept:>3.0f}%{back} {score['tokens']:>7,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--every", type=int, default=20, help="K of the sawtooth (agent turns)")
    parser.add_argument("--budget", type=int, default=None, help="ipse-budget where no compaction")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-generated", action="store_true", help="only the shared sessions")
    args = parser.parse_args()
    paths = sessions(args.data)
    if not paths:
        raise SystemExit(f"no sessions under {args.data}")
    with tempfile.TemporaryDirectory() as scratch:
        generated = None
        if not args.no_generated and (args.data / "claude-code" / COMPACTED).is_file():
            generated = generate(args.data / "claude-code" / COMPACTED, Path(scratch))
        documents, load_s, probe_s = probe_all(paths, generated, args.budget)
        print_cuts(documents, generated)
        print_headline(d for p, d in documents if p != generated)
        print_targets(documents, generated)
    longest = max((d["tokens"], p) for p, d in documents if p != generated)[1]
    print_sawtooth(longest, args.every)
    best_policy(longest)
    print()
    ratio = probe_s / load_s
    print(f"probe time / read time, all sessions: {ratio:.1f}x ({probe_s:.1f}s / {load_s:.1f}s)")


def probe_all(
    paths: Sequence[Path], generated: Path | None, budget: int | None
) -> tuple[list[tuple[Path, dict[str, Any]]], float, float]:
    documents = []
    load_s = probe_s = 0.0
    for path in [*paths, *([generated] if generated else [])]:
        started = time.perf_counter()
        source = load(path)
        loaded = time.perf_counter()
        documents.append((path, probe_session(path, source=source, budget=budget)))
        load_s += loaded - started
        probe_s += time.perf_counter() - loaded
    return documents, load_s, probe_s


def _name(path: Path, generated: Path | None) -> str:
    return ("generated:" if path == generated else "") + path.name[:28]


def print_cuts(documents: Sequence[tuple[Path, Mapping[str, Any]]], generated: Path | None) -> None:
    print(
        "cells: in context %, reachable % (of the rest), tokens; demanded = cited after + standing"
    )
    header = f"{'session':<38} {'cut':>5} {'kind':<10} {'dem':>4} {'re-read':>7}  "
    print(header + "  ".join(f"{n:<18}" for n in SHOWN))
    for path, document in documents:
        for probe in document["probes"]:
            scores = {s["name"]: s for s in probe["strategies"]}
            again = probe["rediscovery"]
            line = f"{_name(path, generated):<38} {probe['cut']:>5} {probe['kind']:<10} "
            line += f"{probe['demanded']['total']:>4} {again['files']:>3}/{again['commands']:<3}  "
            print(line + "  ".join(f"{cell(scores.get(n)):<18}" for n in SHOWN))


def print_headline(documents: Iterable[Mapping[str, Any]]) -> None:
    """The headline of every shared session's cuts together (the generated one left out)."""
    probes = [p for d in documents for p in d["probes"]]
    print()
    print("headline, every shared session's cuts together (micro-averaged over facts):")
    print(f"  {'strategy':<20} {'cuts':>4} {'demanded':>8} {'in context':>10} {'reachable':>9}")
    for row in headline(probes):
        reach = "-" if row["reachable"] is None else f"{row['reachable']:.1f}%"
        print(
            f"  {row['name']:<20} {row['cuts']:>4} {row['demanded']:>8} "
            f"{row['in_context'] or 0:>9.1f}% {reach:>9}  mean {row['tokens']:,} tokens"
        )


def print_targets(
    documents: Sequence[tuple[Path, Mapping[str, Any]]], generated: Path | None
) -> None:
    print()
    print("targets at every compaction point (summary | ipse | ipse-budget: in context, tokens;")
    print("reachable of the rest: ipse, ipse-budget; met: ipse, ipse-budget, reachable):")
    for path, document in documents:
        redacted = _redacted(path)
        for probe in document["probes"]:
            point = probe.get("targets")
            if point is None:
                continue
            s, i, b = point["summary"], point["ipse"], point["ipse-budget"]
            met = "/".join("yes" if v else "NO" for v in point["met"].values())
            if probe["cut"] in redacted:
                met += " (the summary's text is redacted in this file: its tokens are not its own)"
            print(
                f"  {_name(path, generated):<38} {probe['cut']:>5} "
                f"dem {probe['demanded']['total']:>3} | {s['in_context']:>5.1f}% "
                f"{s['tokens']:>6,} | {i['in_context']:>5.1f}% {i['tokens']:>6,} | "
                f"{b['in_context']:>5.1f}% {b['tokens']:>6,} | "
                f"{_pct(i['reachable'])} {_pct(b['reachable'])} | {met}"
            )
            for fact in point["short"]:
                value, who = (
                    fact["value"][:60],
                    f" ({fact['strategy']})" if "strategy" in fact else "",
                )
                print(
                    f"      short of {fact['target']}{who}: {fact['sub']}: {value}: {fact['why']}"
                )


def _redacted(path: Path) -> set[int]:
    """The compaction points whose summary is only redaction markers (as some shared files,
    redacted where they were published, carry: ``[REDACTED_TEXT len=32 sha=...]``)."""
    line = timeline(load(path))
    return {c.index for c in line.compactions if not REDACTION.sub("", c.text()).strip()}


def _pct(value: float | None) -> str:
    return "    -" if value is None else f"{value:>5.1f}%"


def print_sawtooth(path: Path, every: int) -> None:
    seams = probe_session(path, f"every:{every}")["seams"]
    print()
    print(f"sawtooth, {path.name}, a handoff every {every} agent turns:")
    names = ("seam", "no handoff", "after ipse", "authored", "dem", "in ctx", "reach")
    widths = (5, 11, 11, 9, 4, 7, 7)
    print("  " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)))
    for p in seams["seams"]:
        print(
            f"  {p['cut']:>5} {p['tokens_before']:>11,} {p['tokens_after']:>11,} "
            f"{p['authored_chars']:>9,} {p['demanded']:>4} {p['in_context'] or 0:>6.1f}% "
            f"{_pct(p['reachable'])}"
        )
    requests = seams["requests"]
    peak = max(r["tokens"] for r in requests)
    plain = max(r["tokens_without_handoff"] for r in requests)
    sent = sum(r["tokens"] for r in requests)
    sent_plain = sum(r["tokens_without_handoff"] for r in requests)
    print(
        f"  {len(requests)} requests: peak {peak:,} vs {plain:,} tokens; history sent "
        f"{sent:,} vs {sent_plain:,} ({sent / sent_plain:.2f}x)"
    )
    print()
    print(f"handoff frequency, {path.name}: every K agent turns")
    print(f"  {'K':>4} {'seams':>5} {'peak':>8} {'sent':>11} {'in context':>10} {'reach':>6}")
    for k in SWEEP:
        points = probe_session(path, f"every:{k}")["seams"]
        held = sum(p["in_context"] or 0 for p in points["seams"]) / max(1, len(points["seams"]))
        reach = [p["reachable"] for p in points["seams"] if p["reachable"] is not None]
        print(
            f"  {k:>4} {len(points['seams']):>5} "
            f"{max(r['tokens'] for r in points['requests']):>8,} "
            f"{sum(r['tokens'] for r in points['requests']):>11,} {held:>9.1f}% "
            f"{sum(reach) / max(1, len(reach)):>5.1f}%"
        )
    print("  (the seams' shares here are means over seams, each seam's share of its own facts)")


def best_policy(path: Path) -> None:
    """One handoff at `--at best`'s cut against one at a quarter, half and three quarters of
    the valid cuts: history tokens sent over all requests, and the continuity at the cut."""
    line = timeline(load(path))
    index = FactIndex(line, read_invariants(path))
    meter = Meter(line)
    found = best_cut(index, meter)
    if found is None:
        return
    best, scored = found
    upto = [0, *accumulate(meter.messages())]
    turns = line.turns()
    plain = sum(upto[t] for t in turns)
    valid = line.cuts()
    fixed = [(f"{q:.0%}", valid[int(q * (len(valid) - 1))]) for q in (0.25, 0.5, 0.75)]
    print()
    print(f"one handoff, {path.name}: --at best ({len(scored)} turn boundaries) vs fixed cuts")
    print(f"  {'cut':>10} {'saved':>8} {'later':>5} {'in ctx':>6} {'reach':>6} {'sent':>8}")
    with Reach() as reach:
        for label, cut in [(f"best {best.cut}", best.cut), *((f"{q} {c}", c) for q, c in fixed)]:
            c = continuity(index, meter, cut, reach)
            if c is None:
                continue
            sent = sum(upto[t] if t < cut else c.tokens_after + upto[t] - upto[cut] for t in turns)
            print(
                f"  {label:>10} {c.saved:>8,} {c.later_turns:>5} {c.in_context or 0:>5.1f}% "
                f"{_pct(c.reachable)} {sent / plain:>7.2f}x"
            )


# ------------------------------------------------------------------ the generated session


def generate(path: Path, folder: Path) -> Path:
    """A copy of the Claude Code session at ``path`` with two more compactions (see the module
    docstring), written to ``folder``: before the agent's requests nearest a quarter and three
    quarters of its records that follow a tool result, as Claude Code compacts mid-turn."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    budget = default_counter().count(timeline(load(path)).compactions[0].text())
    places = [i for i in range(1, len(records)) if _after_result(records, i)]
    points = sorted({_nearest(places, q * len(records)) for q in (0.25, 0.75)}, reverse=True)
    for at in points:
        summary = stand_in(records[:at], budget, path.name)
        records[at:at] = _compaction(records[at - 1], records[at], summary, at)
    out = folder / f"several-compactions-{path.name}"
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


def _after_result(records: Sequence[Mapping[str, Any]], at: int) -> bool:
    """Whether record ``at`` is the agent's answer to a user record of tool results."""
    if records[at].get("type") != "assistant" or records[at].get("isSidechain"):
        return False
    before = records[at - 1]
    content = (before.get("message") or {}).get("content")
    return (
        before.get("type") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _nearest(indices: Sequence[int], target: float) -> int:
    return min(indices, key=lambda i: abs(i - target))


def _said(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The human's and the agent's texts of the records, in order."""
    out: list[str] = []
    for record in records:
        message = record.get("message") or {}
        if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
            continue
        content = message.get("content")
        if record.get("type") == "user" and isinstance(content, str):
            out.append(content)
        elif record.get("type") == "assistant" and isinstance(content, list):
            out.extend(
                str(b["text"])
                for b in content
                if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
            )
    return out


def stand_in(records: Sequence[Mapping[str, Any]], budget: int, name: str) -> str:
    """The generated summary: the newest of the human's and the agent's texts before the
    point, in order, within ``budget`` tokens; the transcript named as Claude Code does."""
    count = default_counter().count
    tail = (
        "\n\nIf you need specific details from before compaction, read the full transcript "
        f"at: /home/USER/.claude/projects/generated/{name}"
    )
    kept: list[str] = []
    used = count(OPENING + tail)
    for text in reversed(_said(records)):
        cost = count(text + "\n")
        if used + cost > budget:
            break
        kept.append(text)
        used += cost
    return OPENING + "\n".join(reversed(kept)) + tail


def _compaction(
    before: Mapping[str, Any], after: dict[str, Any], summary: str, at: int
) -> list[dict[str, Any]]:
    """The boundary and summary records put before ``after`` (which is re-parented on them)."""
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": f"generated-boundary-{at}",
        "parentUuid": None,
        "logicalParentUuid": before.get("uuid"),
        "sessionId": after.get("sessionId"),
        "isSidechain": False,
        "compactMetadata": {"trigger": "auto", "generated": True},
    }
    kept = {
        "type": "user",
        "uuid": f"generated-summary-{at}",
        "parentUuid": boundary["uuid"],
        "sessionId": after.get("sessionId"),
        "isSidechain": False,
        "isCompactSummary": True,
        "message": {"role": "user", "content": summary},
    }
    after["parentUuid"] = kept["uuid"]
    return [boundary, kept]


if __name__ == "__main__":
    main()
