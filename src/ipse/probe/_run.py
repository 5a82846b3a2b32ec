"""One probe run: read the session, choose the cuts ``--at`` asks for, score each.

``--at`` takes a message index of the timeline (moved back to the nearest cut that splits no
tool exchange), ``checkpoint`` (right after the last checkpoint call's result; where there is
none, the agent CLI's own compaction points), or ``every:K`` (a handoff every K agent turns). With
no ``--at``, the probe runs at every compaction point of the session and at three cuts, a
quarter, half and three quarters of the way through its valid cuts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ipse.errors import CutError, UsageError
from ipse.handoff import is_checkpoint
from ipse.probe._facts import FactIndex, read_invariants
from ipse.probe._model import CAVEAT, Asking
from ipse.probe._score import probe
from ipse.probe._seams import seams
from ipse.probe._strategies import Meter
from ipse.probe._timeline import Timeline, timeline
from ipse.redact import redact
from ipse.tokens import TokenCounter
from ipse.transcript import Source, ToolCall, ToolResult, load

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
    for cut, kind in sorted(found):
        settled = line.settle(cut) or valid[0]
        if all(settled != c for c, _ in out):
            out.append((settled, kind))
    return out


def _checkpoint(line: Timeline) -> list[tuple[int, str]]:
    calls = {
        b.id
        for m in line.messages
        for b in m.blocks
        if isinstance(b, ToolCall) and is_checkpoint(b.name)
    }
    last = None
    for index, message in enumerate(line.messages):
        if any(isinstance(b, ToolResult) and b.call_id in calls for b in message.blocks):
            last = index + 1
    return [(last, "checkpoint")] if last is not None and last < len(line.messages) else []


def probe_session(
    path: str | Path,
    at: str | None = None,
    *,
    format: str | None = None,
    counter: TokenCounter | None = None,
    source: Source | None = None,
    asking: Asking | None = None,
) -> dict[str, Any]:
    """The probe document of a session (one JSON-ready dict); with ``asking``, each strategy's
    context is also asked questions from the demanded facts (not with ``every:K``)."""
    source = source or load(path, format)
    line = timeline(source)
    index = FactIndex(line, read_invariants(Path(path)))
    meter = Meter(line, counter)
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
    every = parse_every(at)
    if every is not None:
        document["seams"] = seams(index, meter, every)
        return document
    document["probes"] = [
        probe(index, meter, cut, kind, asking) for cut, kind in choose_cuts(line, at)
    ]
    return document


__all__ = ["QUARTERS", "choose_cuts", "parse_every", "probe_session"]
