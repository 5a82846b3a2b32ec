"""One probe run: read the session, choose the cuts ``--at`` asks for, score each.

``--at`` takes a message index of the timeline (moved back to the nearest cut that splits no
tool exchange), ``checkpoint`` (right after the last checkpoint call's result, recognised as
the proxy recognises it, `ipse.handoff.is_checkpoint_call`: by name, through an MCP server or
a namespace, or inside Codex's code-mode ``exec``; at the session's end when the result is its
last message, where only standing facts are demanded; where there is none, the agent CLI's own
compaction points), or ``every:K`` (a handoff every K agent turns). With no ``--at``, the probe
runs at every compaction point of the session and at three cuts, a quarter, half and three
quarters of the way through its valid cuts.

A run makes one scratch archive (`Reach`) for what each context can recall, files ipse's
handoffs under the session's own key (as ``ipse handoff`` would), and adds the headline over
every cut it scored (`headline`). ``contexts`` names a folder that gets each strategy's context
text per cut (`write_contexts`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipse._redact import redact
from ipse._tokens import TokenCounter
from ipse.errors import CutError, IpseError, UsageError
from ipse.fileio import atomic_write, check_output
from ipse.handoff._shared import handoff_session, is_checkpoint_call
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._model import CAVEAT, Asking
from ipse.probe._reach import Reach
from ipse.probe._score import Keep, probe
from ipse.probe._seams import seams
from ipse.probe._strategies import SESSION, Context, Meter, Plan
from ipse.probe._targets import headline
from ipse.probe._timeline import Timeline, timeline
from ipse.transcript import ToolCall, ToolResult, load
from ipse.transcript._shared import Source

QUARTERS = (0.25, 0.5, 0.75)


def parse_every(at: str | None) -> int | None:
    """K of ``every:K``, or None when ``at`` is something else."""
    if at is None:
        return None
    match = re.fullmatch(r"every:(\d+)", at.strip())
    if match is None:
        return None
    every = int(match.group(1))
    if every < 1:
        raise UsageError("--at every:K needs K of 1 or more")
    return every


def choose_cuts(line: Timeline, at: str | None) -> list[tuple[int, str]]:
    """The cuts ``at`` names, each with how it was chosen, in order, without repeats."""
    valid = line.cuts()
    if not valid:
        raise CutError("this session has no place to cut: it needs two messages or more")
    found: list[tuple[int, str]] = []
    if at is None:
        found = [(c.index, "compaction") for c in line.compactions]
        found += [(valid[int(q * (len(valid) - 1))], "cut") for q in QUARTERS]
    elif at == "checkpoint":
        found = _checkpoint(line) or [(c.index, "compaction") for c in line.compactions]
        if not found:
            raise CutError(
                "no checkpoint call and no compaction in this session; use --at N or every:K"
            )
    elif re.fullmatch(r"[0-9]+", at.strip()):
        index = int(at)
        if not 1 <= index < len(line.messages):
            raise CutError(f"cut {index} is out of range: 1..{len(line.messages) - 1}")
        found = [(line.settle(index) or valid[0], "index")]
    else:
        raise UsageError(f"--at: expected N, checkpoint or every:K, got {at!r}")
    out: list[tuple[int, str]] = []
    end = len(line.messages)
    for cut, kind in sorted(found):
        settled = cut if cut == end and kind == "checkpoint" else line.settle(cut) or valid[0]
        if all(settled != c for c, _ in out):
            out.append((settled, kind))
    return out


def _checkpoint(line: Timeline) -> list[tuple[int, str]]:
    """Right after the last checkpoint call's result (the session's end when that is its last
    message and no call is left open)."""
    results = {b.call_id: b for m in line.messages for b in m.blocks if isinstance(b, ToolResult)}
    calls = {
        b.id
        for m in line.messages
        for b in m.blocks
        if isinstance(b, ToolCall) and is_checkpoint_call(b, result=results.get(b.id))
    }
    last = None
    for index, message in enumerate(line.messages):
        if any(isinstance(b, ToolResult) and b.call_id in calls for b in message.blocks):
            last = index + 1
    if last is None or (last == len(line.messages) and not line.closed()):
        return []
    return [(last, "checkpoint")]


def write_contexts(folder: Path) -> Keep:
    """What writes each strategy's context text per cut under ``folder`` (made when its parent
    exists): ``cut-N/STRATEGY.txt``, private files written atomically."""
    check_output(folder)
    folder.mkdir(exist_ok=True)

    def keep(cut: int, built: Sequence[Context]) -> None:
        for context in built:
            atomic_write(folder / f"cut-{cut}" / f"{context.name}.txt", context.text, private=True)

    return keep


def probe_session(
    path: str | Path,
    at: str | None = None,
    *,
    format: str | None = None,
    counter: TokenCounter | None = None,
    source: Source | None = None,
    asking: Asking | None = None,
    budget: int | None = None,
    contexts: Path | None = None,
) -> dict[str, Any]:
    """The probe document of a session (one JSON-ready dict); with ``asking``, each strategy's
    context is also asked questions from the demanded facts (not with ``every:K``); ``budget``
    holds ``ipse-budget`` to that many tokens at cuts where the agent CLI did not compact;
    ``contexts`` is a folder for each strategy's context text per cut."""
    if budget is not None and budget < 1:
        raise UsageError(f"--budget: a number of tokens above 0, got {budget}")
    keep = write_contexts(contexts) if contexts is not None else None
    source = source or load(path, format)
    line = timeline(source)
    index = FactIndex(line, read_invariants(Path(path)))
    meter = Meter(line, counter)
    plan = plan_of(source, budget)
    document = _heading(path, source, line, meter, asking)
    every = parse_every(at)
    with Reach() as reach:
        if every is not None:
            document["seams"] = seams(index, meter, every, plan=plan, reach=reach)
            return document
        document["probes"] = [
            probe(index, meter, cut, kind, asking, plan=plan, reach=reach, keep=keep)
            for cut, kind in choose_cuts(line, at)
        ]
    document["headline"] = headline(document["probes"])
    return document


def plan_of(source: Source, budget: int | None = None) -> Plan:
    """How ipse's contexts of ``source`` are made: filed under the key ``ipse handoff`` files
    it under (a plain key where it has none), ``ipse-budget`` held to ``budget`` where the
    agent CLI did not compact."""
    try:
        session = handoff_session(source)
    except IpseError:
        session = SESSION
    return Plan(session, budget)


def _heading(
    path: str | Path, source: Source, line: Timeline, meter: Meter, asking: Asking | None
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "session": str(path),
        "format": source.format,
        "messages": len(line.messages),
        "compactions": [c.index for c in line.compactions],
        "tokenizer": meter.counter.name,
        "tokens": sum(meter.messages()),
    }
    if asking is not None:
        document["model"] = {
            "url": redact(asking.asker.url),
            "api": asking.asker.api,
            "model": asking.asker.model,
            "judge": redact(asking.judge.url) if asking.judge else None,
            "caveat": CAVEAT,
        }
    return document


__all__ = [
    "QUARTERS",
    "choose_cuts",
    "parse_every",
    "plan_of",
    "probe_session",
    "write_contexts",
]
