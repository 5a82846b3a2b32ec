"""The ledger a handoff carries, on every shared session: its size, and what it names.

Each shared Claude Code session, the Codex rollouts and the mini-swe-agent trajectory, handed
off at ``now`` (all but an unfinished tool exchange) with `ipse.handoff.run`:

- the ledger's size in o200k tokens, whole (no cap) and under each cap of ``--caps`` (the
  default cap is marked), with the entries it shows of all it has;
- the share of the files the removed calls changed (created, edited, deleted, moved), of the
  commands they ran (their first meaningful line; a command that only shows files, ``cat``,
  ``sed -n``, is a read) and of the files they read, that the handed-off context names,
  found as substrings of its text, before (``strip`` alone, the handoff without its marker)
  and after (the handoff with its marker and ledger), per cap.

The files and commands come from the removed tool calls themselves (`ipse.handoff.effects`),
so a share of 100% needs every one of them in the context; the ledger is cut at its cap, newest
first, so older ones fall out first.

    python bench/ledger.py [--caps 300 500 800 1000 1500]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ipse._tokens import default_counter
from ipse.handoff import HandoffOptions, run, strip
from ipse.handoff._effects import command_of, first_line, read_paths
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS
from ipse.handoff.effects import artifacts
from ipse.transcript import Conversation, Text, ToolCall, load

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()
CHANGES = ("created", "edited", "deleted", "moved")


def sessions() -> list[Path]:
    return [
        *sorted((DATA / "claude-code").glob("*.jsonl")),
        *sorted((DATA / "codex").glob("*.jsonl")),
        *sorted((DATA / "openai-chat").glob("*.json")),
    ]


def grit(conversation: Conversation, removed: set[str]) -> tuple[set[str], set[str], set[str]]:
    """The files the removed calls changed, the commands they ran (first lines), the files
    they read."""
    files: set[str] = set()
    commands: set[str] = set()
    reads: set[str] = set()
    for message in conversation.messages:
        for block in message.blocks:
            if not isinstance(block, ToolCall) or block.id not in removed:
                continue
            files.update(a.value for a in artifacts(block) if a.action in CHANGES)
            read = read_paths(block)
            reads.update(read)
            command = command_of(block)
            if command and not read:
                commands.add(first_line(command).removesuffix(" ..."))
    return files, commands, reads - files


def named(context: str, values: set[str]) -> str:
    if not values:
        return "    -"
    found = sum(value in context for value in values)
    return f"{100 * found / len(values):4.0f}%"


def context_text(conversation: Conversation) -> str:
    return "\n".join(b.text for m in conversation.messages for b in m.blocks if isinstance(b, Text))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--caps", type=int, nargs="+", default=[300, 500, 800, 1000, 1500])
    args = parser.parse_args()
    count = default_counter().count
    caps = sorted(set(args.caps) | {DEFAULT_LEDGER_TOKENS})
    print(
        f"{'session':<36} {'calls':>5} {'files':>5} {'cmds':>5} {'reads':>5} {'whole':>6}  "
        f"{'cap':>5} {'tokens':>6} {'shown':>9}  {'files named':>14} {'cmds named':>14} "
        f"{'reads named':>14}"
    )
    for path in sessions():
        conversation = load(path).current()
        stripped, report = strip(conversation, "now")
        removed = {r.id for r in report.removed if r.kind != "thinking"}
        files, commands, reads = grit(conversation, removed)
        before = context_text(stripped)
        whole = run(conversation, HandoffOptions(at="now", ledger_tokens=10**6), session="s")
        assert whole.marked is not None and whole.marked.rendered is not None
        total = whole.marked.rendered.tokens
        for cap in caps:
            done = run(conversation, HandoffOptions(at="now", ledger_tokens=cap), session="s")
            assert done.marked is not None and done.marked.rendered is not None
            rendered = done.marked.rendered
            after = context_text(done.after)
            mark = "*" if cap == DEFAULT_LEDGER_TOKENS else " "
            entries = f"{len(rendered.shown)}/{len(rendered.shown) + rendered.omitted}"
            print(
                f"{path.name[:36]:<36} {len(removed):>5} {len(files):>5} {len(commands):>5} "
                f"{len(reads):>5} {total:>6}  {cap:>4}{mark} {count(rendered.text):>6} "
                f"{entries:>9}  {named(before, files)} > {named(after, files)}  "
                f"{named(before, commands)} > {named(after, commands)}  "
                f"{named(before, reads)} > {named(after, reads)}"
            )
    print("(* the default cap; 'whole': the ledger with no cap, o200k tokens)")


if __name__ == "__main__":
    main()
