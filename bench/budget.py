"""What a handoff keeps of the facts the agent used next, with its ledger and under a budget.

At every point where a shared session's harness compacted (and, with ``--every N``, at every
N-th valid cut as well), the facts from before the cut that the session used after it (as
`ipse probe` finds them: paths, commands, errors, the human's rules, the open task) are looked
up, as written, in each context the session could have gone on with:

- ``strip``: the handoff without its marker (tool traffic and thinking removed, every word
  kept);
- ``ipse``: the whole handoff (`ipse.handoff.run`): the same, with the marker and its ledger;
- ``ipse-budget``: the whole handoff held to the harness summary's own size in tokens (at a
  cut with no compaction, to ``--budget``);
- ``harness``: the harness's own summary, where it compacted there.

For each: its tokens (o200k, as the probe counts a context: the text of its blocks) and the
share of the demanded facts it holds. What a budget moves out is one ``recall`` away, and is
not counted here.

    python bench/budget.py [--every N] [--budget TOKENS]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ipse.errors import IpseError
from ipse.handoff import HandoffOptions, run, strip
from ipse.probe import FactIndex, block_text, demanded, timeline
from ipse.tokens import default_counter
from ipse.transcript import Conversation, load

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()


def sessions() -> list[Path]:
    return [*sorted((DATA / "claude-code").glob("*.jsonl")), *sorted((DATA / "codex").glob("*"))]


def text(conversation: Conversation) -> str:
    return "\n".join(block_text(b) for m in conversation.messages for b in m.blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--every", type=int, default=0, help="also every N-th valid cut")
    parser.add_argument("--budget", type=int, default=3000, help="budget where no compaction")
    args = parser.parse_args()
    count = default_counter().count
    print(
        f"{'session':<30} {'cut':>5} {'facts':>5}  "
        + "  ".join(f"{name:>17}" for name in ("strip", "ipse", "ipse-budget", "harness"))
    )
    for path in sessions():
        line = timeline(load(path))
        index = FactIndex(line)
        cuts = {c.index: c for c in line.compactions if c.index > 0}
        points = sorted(set(cuts) | set(line.cuts()[:: args.every] if args.every else ()))
        for cut in points:
            demand = demanded(index, index.facts(cut), cut)
            if not demand:
                continue
            before = line.conversation(cut)
            summary = cuts[cut].text() if cut in cuts else ""
            budget = count(summary) if summary else args.budget
            found: list[str] = []
            try:
                stripped = strip(before, "end")[0]
                whole = run(before, HandoffOptions(at="end"), session="s", recallable=True).after
                held = run(
                    before, HandoffOptions(at="end", budget=budget), session="s", recallable=True
                ).after
            except IpseError as exc:
                print(f"{path.name[:30]:<30} {cut:>5} not handed off: {exc}"[:120])
                continue
            for context in (text(stripped), text(whole), text(held), summary):
                if not context:
                    found.append(f"{'-':>17}")
                    continue
                share = sum(f.value in context for f in demand) / len(demand)
                found.append(f"{count(context):>7,} tok {100 * share:4.0f}%")
            print(f"{path.name[:30]:<30} {cut:>5} {len(demand):>5}  " + "  ".join(found))


if __name__ == "__main__":
    main()
