"""What a handoff keeps of the facts the agent used next, with its ledger and under a budget.

At every point where a shared session's agent CLI compacted (and, with ``--every N``, at every
N-th valid cut as well), `ipse probe`'s own measurement (`ipse.probe.probe`: the same facts,
demand, contexts, tokens and recall queries) of:

- ``no ledger``: ipse's handoff with its ledger capped at 0 tokens (the marker says what was
  removed, and lists nothing);
- ``ipse``: the handoff as ipse makes it, with the marker and its ledger;
- ``ipse-budget``: the handoff held to the summary's own tokens (at a cut with no compaction, to
  ``--budget``);
- ``compaction-summary``: the agent CLI's own summary, where it compacted there.

For each: its tokens (o200k, as the probe counts a context: the text of its blocks), the share
of the demanded facts in its context, and the share of the others reachable by a recall query
formed from the context (never added to the first). These are the numbers ``ipse probe --at N
--budget B --json`` gives at the same cut.

    python bench/budget.py [--every N] [--budget TOKENS]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ipse.probe import probe, timeline
from ipse.probe._demand import demanded
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._reach import Reach
from ipse.probe._run import plan_of
from ipse.probe._score import score
from ipse.probe._strategies import Meter, handoff, ipse_contexts
from ipse.transcript import load

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()
SHOWN = ("no ledger", "ipse", "ipse-budget", "compaction-summary")


def sessions() -> list[Path]:
    return [*sorted((DATA / "claude-code").glob("*.jsonl")), *sorted((DATA / "codex").glob("*"))]


def cell(line: dict[str, Any] | None) -> str:
    if line is None or line["in_context"] is None:
        return f"{'-':>22}"
    reach = "-" if line["reachable"] is None else f"{line['reachable']:.0f}%"
    return f"{line['tokens']:>7,} tok {line['in_context']:4.0f}% {reach:>5}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--every", type=int, default=0, help="also every N-th valid cut")
    parser.add_argument("--budget", type=int, default=3000, help="budget where no compaction")
    args = parser.parse_args()
    print("cells: tokens, in context %, reachable % of the rest")
    print(f"{'session':<30} {'cut':>5} {'facts':>5}  " + "  ".join(f"{n:>22}" for n in SHOWN))
    with Reach() as reach:
        for path in sessions():
            source = load(path)
            line = timeline(source)
            index = FactIndex(line, read_invariants(path))
            meter = Meter(line)
            plan = plan_of(source, args.budget)
            compacted = {c.index for c in line.compactions if c.index > 0}
            points = sorted(compacted | set(line.cuts()[:: args.every] if args.every else ()))
            for cut in points:
                kind = "compaction" if cut in compacted else "cut"
                found = probe(index, meter, cut, kind, plan=plan, reach=reach)
                if not found["demanded"]["total"]:
                    continue
                lines = {s["name"]: s for s in found["strategies"]}
                bare = ipse_contexts(meter, handoff(meter, cut, plan.session, ledger_tokens=0))
                demand = demanded(index, index.facts(cut), cut)
                lines["no ledger"] = score(bare[0], demand, reach)
                cells = "  ".join(cell(lines.get(n)) for n in SHOWN)
                print(f"{path.name[:30]:<30} {cut:>5} {len(demand):>5}  {cells}")


if __name__ == "__main__":
    main()
