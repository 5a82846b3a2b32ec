"""The micro-handoff of the largest shared session against orjson on the same input, and the
saving on every shared session.

Speed. Baseline: ``orjson.loads`` of every line of the session plus ``orjson.dumps`` of every
record (parsing and serializing the same input). Measured, in the same process, interleaved,
best of N: (1) the whole handoff: read the session, strip at ``now`` (input and output validated),
verify, write the request body with ``orjson.dumps``; (2) the transform alone on the loaded
conversation: strip, verify, write. Target: at most 3x the baseline.

Saving. Every shared Claude Code session, the openai-chat trajectory and the last request of the
HTTP log, cut at ``now`` (all but an unfinished tool exchange at the end) and at ``end`` (every
message): messages, tool calls and message tokens before and after, the share of tokens saved,
authored characters before and after (equal, or it is a bug), narration coverage, and the share
of the remaining tokens that is harness text (system reminders, command expansions, compaction
summaries: kept like every authored text). Target: at least 80% fewer tokens on the Claude Code
sessions, 100% of authored characters kept.

    python bench/handoff.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from ipse._tokens import default_counter
from ipse.errors import IpseError
from ipse.handoff import strip, verify
from ipse.handoff._measure import body_bytes, measure, saving
from ipse.handoff._narration import narration
from ipse.transcript import load
from ipse.transcript._model import Conversation
from ipse.transcript._stats import TokenTally

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()


def sessions() -> list[Path]:
    claude = sorted((DATA / "claude-code").glob("*.jsonl"))
    return [
        *claude,
        *sorted((DATA / "openai-chat").glob("*.json")),
        DATA / "anthropic-http" / "captured-2",
    ]


def baseline(path: Path) -> int:
    data = path.read_bytes()
    records = [orjson.loads(line) for line in data.split(b"\n") if line.strip()]
    return sum(len(orjson.dumps(r)) for r in records)


def transform(conversation: Conversation) -> int:
    after, report = strip(conversation, "now")
    assert verify(conversation, after, at=report.cut).ok
    return len(body_bytes(after))


def whole(path: Path) -> int:
    return transform(load(path).current())


def timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def speed(path: Path, repeat: int) -> None:
    conversation = load(path).current()
    runs: dict[str, list[float]] = {"baseline": [], "handoff": [], "transform": []}
    for _ in range(repeat):  # interleaved, so drift hits all three alike
        runs["baseline"].append(timed(lambda: baseline(path)))
        runs["handoff"].append(timed(lambda: whole(path)))
        runs["transform"].append(timed(lambda: transform(conversation)))
    base = min(runs["baseline"])
    print(f"speed: {path.name} ({path.stat().st_size:,} bytes), best of {repeat}")
    print(f"  orjson parse + serialize (baseline)      {base * 1000:8.1f} ms   1.00x")
    for key, label in (
        ("handoff", "handoff: read, strip, verify, write"),
        ("transform", "strip + verify + write (loaded input)"),
    ):
        best = min(runs[key])
        print(f"  {label:<40} {best * 1000:8.1f} ms   {best / base:.2f}x")


def saving_table() -> None:
    tally = TokenTally(default_counter())
    header = (
        f"{'session':<34} {'cut':<4} {'msgs':>9} {'calls':>8} {'tokens':>15} {'saved':>6} "
        f"{'authored chars':>15} {'kept':>5} {'narr.':>5} {'harness':>7}"
    )
    print(header)
    print("-" * len(header))
    for path in sessions():
        source = load(path)
        before = source.current()
        for cut in ("now", "end"):
            at: str | int = len(before.messages) if cut == "end" else cut
            name = path.name[:34]
            try:
                after, report = strip(before, at)
            except IpseError as exc:
                print(f"{name:<34} {cut:<4} not stripped: {exc}"[:140])
                continue
            verdict = verify(before, after, at=report.cut)
            old, new = measure(before, tally), measure(after, tally)
            told = narration(before, report, tally)
            kept = verdict.found_chars == old["authored_chars"] and verdict.ok
            kinds = tally.fresh()
            kinds.add_messages(after.messages)
            harness = kinds.by_kind["harness_text"] / new["tokens"] if new["tokens"] else 0.0
            saved = saving(old["tokens"], new["tokens"])
            print(
                f"{name:<34} {cut:<4} {old['messages']:>4}>{new['messages']:<4} "
                f"{old['tool_calls']:>3}>{new['tool_calls']:<4} "
                f"{old['tokens']:>7,}>{new['tokens']:<7,} {saved:>5.1f}% "
                f"{old['authored_chars']:>7,}>{verdict.found_chars:<7,} "
                f"{'100%' if kept else 'LOST':>5} {told.coverage:>5.0%} {harness:>7.0%}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    claude = sorted((DATA / "claude-code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    speed(claude[-1], args.repeat)
    print()
    saving_table()


if __name__ == "__main__":
    main()
