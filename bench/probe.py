"""Continuity on every shared Claude Code, Codex and Cline session: what each strategy keeps of
the facts the agent used next, at the session's own compaction points and at three cuts (a
quarter, half and three quarters of its valid cuts), and the sawtooth of a handoff every K turns
on the longest session (in tokens), and how often to hand off: K swept over 5, 10, 20, 40 (the
history tokens sent over all requests, the peak, and the mean continuity at the seams).

Per cut: the demanded facts (cited after the cut, plus the standing rules and open task),
re-discovery after the cut (file re-reads / command re-runs), and per strategy the share of
demanded facts in context, the share recallable (ipse's archive), and tokens (o200k). The goal
is ipse at or above every other strategy on kept + recallable, at fewer tokens than all but
truncation; a line after the table names each cut where that does not hold.

Speed, for scale only: the probe of all cuts of a session against reading that session (the
baseline, in the same run).

    python bench/probe.py [--every K] [--data DIR]
"""

from __future__ import annotations

import argparse
import time
from itertools import accumulate
from pathlib import Path
from typing import Any

from ipse.probe import (
    FactIndex,
    Meter,
    best_cut,
    continuity,
    probe_session,
    read_invariants,
    timeline,
)
from ipse.transcript import load

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()
SWEEP = (5, 10, 20, 40)
SHOWN = ("none", "ipse", "mask-3", "mask-5", "mask-10", "truncate", "compaction-summary")


def sessions(data: Path) -> list[Path]:
    found = sorted((data / "claude-code").glob("*.jsonl"))
    found += sorted((data / "codex").glob("*.jsonl"))
    found += sorted((data / "cline").glob("*")) if (data / "cline").is_dir() else []
    return found


def cell(score: dict[str, Any] | None) -> str:
    if score is None:
        return "-"
    kept = score["in_context"]
    back = score["recallable"] or 0.0
    if kept is None:
        return f"  n/a {score['tokens']:>7,}"
    extra = f"+{back:.0f}" if back else ""
    return f"{kept:>3.0f}{extra:<4}% {score['tokens']:>7,}"


def shortfall(probe: dict[str, Any]) -> list[str]:
    """Where ipse is below another strategy on kept + recallable, or above one on tokens."""
    scores = {s["name"]: s for s in probe["strategies"]}
    ipse = scores.get("ipse")
    if ipse is None or ipse["kept_or_recallable"] is None:
        return []
    out = []
    for name, s in scores.items():
        if name == "ipse" or s["kept_or_recallable"] is None:
            continue
        if s["kept_or_recallable"] > ipse["kept_or_recallable"]:
            lost = ", ".join(f["value"][:40] for f in ipse["lost"][:3])
            out.append(f"{name} keeps more ({s['kept_or_recallable']}%): ipse lost {lost}")
        if name not in ("truncate",) and s["tokens"] < ipse["tokens"]:
            out.append(f"{name} is smaller ({s['tokens']:,} vs {ipse['tokens']:,} tokens)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=20, help="K of the sawtooth (agent turns)")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    paths = sessions(args.data)
    if not paths:
        raise SystemExit(f"no sessions under {args.data}")
    print("cells: in context % (+ recallable %) and tokens; demanded = cited after + standing")
    header = f"{'session':<28} {'cut':>5} {'kind':<10} {'dem':>4} {'re-read':>7}  "
    header += "  ".join(f"{n:<13}" for n in SHOWN)
    print(header)
    notes: list[str] = []
    totals: dict[str, list[float]] = {n: [] for n in SHOWN}
    tokens: dict[str, list[int]] = {n: [] for n in SHOWN}
    longest: tuple[int, Path] | None = None
    load_s = probe_s = 0.0
    for path in paths:
        started = time.perf_counter()
        source = load(path)
        loaded = time.perf_counter()
        document = probe_session(path, source=source)
        done = time.perf_counter()
        load_s += loaded - started
        probe_s += done - loaded
        if longest is None or document["tokens"] > longest[0]:
            longest = (document["tokens"], path)
        name = path.name[:28]
        for probe in document["probes"]:
            scores = {s["name"]: s for s in probe["strategies"]}
            again = probe["rediscovery"]
            line = f"{name:<28} {probe['cut']:>5} {probe['kind']:<10} "
            line += f"{probe['demanded']['total']:>4} {again['files']:>3}/{again['commands']:<3}  "
            line += "  ".join(f"{cell(scores.get(n)):<13}" for n in SHOWN)
            print(line)
            for n in SHOWN:
                s = scores.get(n)
                if s is not None and s["kept_or_recallable"] is not None:
                    totals[n].append(s["kept_or_recallable"])
                    tokens[n].append(s["tokens"])
            notes += [f"{name} @{probe['cut']}: {note}" for note in shortfall(probe)]
    print()
    print("mean over cuts: kept + recallable % / tokens")
    for n in SHOWN:
        if totals[n]:
            mean = sum(totals[n]) / len(totals[n])
            print(
                f"  {n:<9} {mean:6.1f}%  {sum(tokens[n]) / len(tokens[n]):>10,.0f} tokens  "
                f"({len(totals[n])} cuts)"
            )
    print()
    print("where ipse is below another strategy, or larger than one but truncate:")
    for note in notes or ["  nowhere"]:
        print(f"  {note}")
    assert longest is not None
    seams = probe_session(longest[1], f"every:{args.every}")["seams"]
    print()
    print(f"sawtooth, {longest[1].name}, a handoff every {args.every} agent turns:")
    names = ("seam", "no handoff", "after ipse", "authored", "dem", "kept+rec")
    print("  " + " ".join(f"{n:>{w}}" for n, w in zip(names, (5, 11, 11, 9, 4, 8), strict=True)))
    for p in seams["seams"]:
        print(
            f"  {p['cut']:>5} {p['tokens_before']:>11,} {p['tokens_after']:>11,} "
            f"{p['authored_chars']:>9,} {p['demanded']:>4} {p['kept_or_recallable'] or 0:>7.1f}%"
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
    print(f"handoff frequency, {longest[1].name}: every K agent turns")
    print(f"  {'K':>4} {'seams':>5} {'peak':>8} {'sent':>11} {'in context':>10} {'kept+rec':>8}")
    for every in SWEEP:
        sweep = probe_session(longest[1], f"every:{every}")["seams"]
        points = sweep["seams"]
        held = [p["in_context"] for p in points if p["in_context"] is not None]
        back = [p["kept_or_recallable"] for p in points if p["kept_or_recallable"] is not None]
        print(
            f"  {every:>4} {len(points):>5} {max(r['tokens'] for r in sweep['requests']):>8,} "
            f"{sum(r['tokens'] for r in sweep['requests']):>11,} "
            f"{sum(held) / max(1, len(held)):>9.1f}% {sum(back) / max(1, len(back)):>7.1f}%"
        )
    best_policy(longest[1])
    print()
    ratio = probe_s / load_s
    print(f"probe time / read time, all sessions: {ratio:.1f}x ({probe_s:.1f}s / {load_s:.1f}s)")


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
    sizes = meter.messages()
    upto = [0, *accumulate(sizes)]
    turns = line.turns()
    plain = sum(upto[t] for t in turns)
    valid = line.cuts()
    fixed = [(f"{q:.0%}", valid[int(q * (len(valid) - 1))]) for q in (0.25, 0.5, 0.75)]
    print()
    print(f"one handoff, {path.name}: --at best ({len(scored)} turn boundaries) vs fixed cuts")
    print(f"  {'cut':>10} {'saved':>8} {'later':>5} {'in ctx':>6} {'+rec':>5} {'sent':>8}")
    for label, cut in [(f"best {best.cut}", best.cut), *((f"{q} {c}", c) for q, c in fixed)]:
        c = continuity(index, meter, cut)
        if c is None:
            continue
        sent = sum(upto[t] if t < cut else c.tokens_after + upto[t] - upto[cut] for t in turns)
        print(
            f"  {label:>10} {c.saved:>8,} {c.later_turns:>5} {c.in_context or 0:>5.1f}% "
            f"{c.recallable or 0:>4.1f}% {sent / plain:>7.2f}x"
        )


if __name__ == "__main__":
    main()
