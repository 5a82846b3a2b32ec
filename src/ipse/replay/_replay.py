"""A recorded session through the autopilot, offline: both sides priced by the prefix replay.

The recorded side is ``ipse prefix``'s replay of the session as it happened (`ipse.prefix.
analyze`: the record where a request has usage). The policy side is the same requests as the
proxy would have forwarded them (`ipse.replay._rewrite`), at their recorded times, through the
same replay: the prompt cache is modelled request by request (5-minute and 1-hour writes,
reads, entries expiring over idle gaps), every request priced at its model's prices.

A request the proxy never sent has no record, so the policy side is the cache model's; the
session as recorded is priced by the same model too (each request at its recorded size and
with the TTL its writes carried, its split left to the model), and the ratio of the two is the
policy's effect: what the model gets wrong about the session falls on both sides alike. With
policy ``off`` the two are the same requests and the ratio is 1. The policy's bill at the
recorded prices is the recorded bill times that ratio.

Up to a conversation's first compaction by the agent CLI the two sides send the same
conversation. Where the autopilot kept every request of a conversation below the agent CLI's
compaction point, the agent CLI would not have compacted: the compacting call is not made, and
the requests after the compaction send the history as it went on (the stretch before, then
each later request's items after the agent CLI's opening), cut by the autopilot where it cuts.
Where it did not (policy ``off`` or ``nudge``, or a request still above the point), the
compaction happens as recorded and the requests after it are a history of their own.

A nudge adds its words to every request after it until the next cut, and is never answered:
the recorded agent never saw it, so in ``nudge`` mode nothing is cut, and in ``cut`` mode the
cuts decide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from ipse import _progress as ipse_progress
from ipse.handoff._shared import AutopilotPolicy, Limits, RequestState, autopilot_step, limits_for
from ipse.prefix import PrefixReport, Request, analyze, read_requests
from ipse.prefix._shared import MIN_TOKENS, RequestLog
from ipse.replay._continuity import at_compactions, at_cuts
from ipse.replay._lines import Line, Stretch, group, lines_of
from ipse.replay._rewrite import PlannedLine, Rewriter, nudge_items, plan_line
from ipse.replay._sizes import ByteSizes, Calibration, LineTokens, fit, recorded_total

Progress = Callable[[Iterable[Any]], Iterable[Any]]
Compaction = Callable[[int, int], int | None] | int | None


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """The policy replayed, and the sizes it works with: the model's ``window`` and
    ``max_output`` (None: the window table's), and the agent CLI's ``compaction`` point (a
    number, or a function of the window and the output, as `ipse.agents` has one; None: the
    window less the output). ``continuity``: probe each cut (and each compaction)."""

    policy: AutopilotPolicy = field(default_factory=AutopilotPolicy)
    window: int | None = None
    max_output: int | None = None
    compaction: Compaction = None
    continuity: bool = True
    min_tokens: int = MIN_TOKENS


@dataclass(slots=True)
class Replayed:
    """What a replay made of a log: the prefix reports of the session as recorded, as the cache
    model prices it, and with the policy; the lines it planned, the requests the policy side
    sent, and what it noticed."""

    log: RequestLog
    options: ReplayOptions
    recorded: PrefixReport
    policy: PrefixReport  # the requests the proxy would have sent, as the cache model prices them
    modelled: PrefixReport  # the recorded requests as the cache model prices them
    sent: list[Request]
    lines: list[PlannedLine]
    dropped: list[int]  # compacting calls the policy side never makes
    prevented: list[int]  # the first requests after each compaction the autopilot prevented
    limits: dict[int, int]  # per request index: its conversation's compaction point
    calibration: Calibration
    compactions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def replay_session(
    path: str | Path, options: ReplayOptions | None = None, *, format: str | None = None
) -> Replayed:
    """Read ``path`` (a Claude Code session, a Codex rollout, a log of requests such as the
    proxy's record) and replay it with and without the policy."""
    log = read_requests(path, format)
    return replay_log(log, options, session=Path(path), format=format)


def _progress(label: str) -> Progress:
    """Progress of one pass over the requests (shown by a front end that listens)."""
    return lambda items: ipse_progress.track(items, label)


def replay_log(
    log: RequestLog,
    options: ReplayOptions | None = None,
    *,
    session: Path | None = None,
    format: str | None = None,
) -> Replayed:
    """Replay ``log``'s requests as recorded and with ``options``' policy (see the module);
    ``session``: the file they were read from (the probe reads it again, for its compactions
    and the invariants beside it)."""
    opts = options or ReplayOptions()
    recorded = analyze(
        log.requests,
        warnings=log.warnings,
        min_tokens=opts.min_tokens,
        merged=log.merged,
        progress=_progress("replaying as recorded"),
    )
    planner = _Planner(log.requests, opts)
    planner.plan()
    sent = [
        planner.rewritten.get(r.index, r) for r in log.requests if r.index not in planner.dropped
    ]
    # (the policy side counts as the recorded side did: byte estimates scaled to the usage
    # where every request has some, o200k counts otherwise)
    recorded_all = all(recorded_total(r.usage) is not None for r in log.requests)
    policy, modelled = (
        analyze(
            [_unrecorded(r) for r in requests],
            recorded.provider,
            tokenizer="bytes" if recorded_all else "o200k",
            min_tokens=opts.min_tokens,
            progress=_progress(label),
            front_fit=recorded.front_fit,
        )
        for requests, label in (
            (sent, "replaying with the policy"),
            (log.requests, "replaying as the cache model has it"),
        )
    )
    done = Replayed(
        log,
        opts,
        recorded,
        policy,
        modelled,
        sent,
        planner.planned,
        sorted(planner.dropped),
        planner.prevented,
        planner.limits,
        planner.session_fit,
        notes=[n for p in planner.planned for n in p.notes],
    )
    if opts.continuity:
        for planned in planner.planned:
            at_cuts(planned, session)
        if session is not None and any(r.compaction for r in log.requests):
            done.compactions = at_compactions(session, format)
    return done


class _Planner:
    """Plans every line of a log and rewrites its requests (see the module docstring)."""

    def __init__(self, requests: Sequence[Request], options: ReplayOptions) -> None:
        self.requests = requests
        self.options = options
        self.sizes = ByteSizes()
        self.grouped = group(requests)
        self.session_fit = fit(self._points(self.grouped.stretches))
        self.planned: list[PlannedLine] = []
        self.rewritten: dict[int, Request] = {}
        self.dropped: set[int] = set()
        self.prevented: list[int] = []
        self.limits: dict[int, int] = {}

    def plan(self) -> None:
        for run in lines_of(self.grouped.stretches):
            start = 0
            while start < len(run):
                start += self._line(run, start)

    def _line(self, run: list[Stretch], start: int) -> int:
        """Plan the line that starts at ``run[start]``, joining the stretches after it as far
        as the autopilot prevents the compactions between them; how many it joined."""
        line = Line([run[start]])
        calibration = fit(self._points(line.stretches), self.session_fit)
        limits = self._limits(run, start)
        planned, sent = self._rewrite(line, limits, calibration)
        while start + len(line.stretches) < len(run) and self._prevents(line, sent, limits):
            line.stretches.append(run[start + len(line.stretches)])
            planned, sent = self._rewrite(line, limits, calibration)
            self.prevented.append(line.stretches[-1].members[0].request.index)
            self._drop_compacting(line.stretches[-2], line.stretches[-1])
        self.planned.append(planned)
        for (_, member), request in zip(line.members(), sent, strict=True):
            self.limits[request.index] = limits.limit
            if request is not member.request:
                self.rewritten[request.index] = request
        return len(line.stretches)

    def _rewrite(
        self, line: Line, limits: Limits, calibration: Calibration
    ) -> tuple[PlannedLine, list[Request]]:
        """The line planned and each of its requests as forwarded. The plan counts the front
        by its bytes; what the recorded usage holds beyond them (`LineTokens.beyond`) is taken
        off the limits and the policy's thresholds, so the plan compares what was billed."""
        tokens = LineTokens(line, self.sizes, calibration)
        beyond = tokens.beyond
        shifted = Limits(
            max(1, limits.window - beyond),
            limits.max_output,
            None if limits.compaction is None else max(1, limits.compaction - beyond),
        )
        policy = self.options.policy
        policy = replace(
            policy,
            soft=None if policy.soft is None else max(1, policy.soft - beyond),
            hard=None if policy.hard is None else max(1, policy.hard - beyond),
        )
        planned = plan_line(line, policy, shifted, tokens)
        planned.limits, planned.beyond = limits, beyond
        empty = RequestState(tokens=0, tokens_after=None, limits=shifted)
        planned.hard = beyond + autopilot_step(empty, policy).thresholds.hard
        rewriter = Rewriter(planned, tokens, nudge_items(line.codec))
        return planned, [rewriter.rewrite(n, m) for n, m in line.members()]

    def _prevents(self, line: Line, sent: Sequence[Request], limits: Limits) -> bool:
        """Whether the autopilot kept the agent CLI from compacting after the line's last
        stretch: it cuts, and every request of that stretch stayed below the point."""
        if self.options.policy.mode != "cut":
            return False
        last = {m.request.index for m in line.stretches[-1].members}
        sizes = [_size(r) for r in sent if r.index in last]
        return all(size is not None and size < limits.limit for size in sizes)

    def _drop_compacting(self, before: Stretch, after: Stretch) -> None:
        """The compacting calls between two stretches the autopilot joined are never made."""
        first = before.members[-1].request.index
        last = after.members[0].request.index
        for request in self.grouped.compacting:
            if first < request.index < last:
                self.dropped.add(request.index)

    def _limits(self, run: Sequence[Stretch], start: int) -> Limits:
        """The limits of the line at ``run[start]``: the model's window and the agent CLI's
        point; where the conversation compacted later, no higher than the largest request the
        agent CLI let through before it did (the session shows it compacted there)."""
        opts = self.options
        first = run[start].members[0].request
        limits = limits_for(
            first.model,
            first.provider,
            window=opts.window,
            max_output=opts.max_output,
            compaction=opts.compaction,
        )
        if isinstance(opts.compaction, int) or start + 1 >= len(run):
            return limits
        seen = [recorded_total(m.request.usage) for m in run[start].members]
        largest = max((s for s in seen if s is not None), default=None)
        if largest is None or largest >= limits.limit:
            return limits
        return Limits(limits.window, limits.max_output, largest)

    def _points(self, stretches: Iterable[Stretch]) -> list[tuple[int, int]]:
        """(JSON bytes, recorded input tokens) of each recorded request of ``stretches``."""
        points = []
        for stretch in stretches:
            key = stretch.codec.history_key
            front = self.sizes.front(stretch.front)
            for member in stretch.members:
                total = recorded_total(member.request.usage)
                if total is not None:
                    points.append((front + self.sizes.total(member.items(key)), total))
        return points


def _unrecorded(request: Request) -> Request:
    """A request as the cache model prices it: at its record's size, its writes at the TTL the
    record says they carried (a usage that says only that), its split the model's. A request
    without a record (one the proxy never sent) is as it is."""
    usage = request.usage
    if usage is None:
        return request
    split = usage.get("cache_creation")
    kept = {"cache_creation": split} if split is not None else None
    return msgspec.structs.replace(request, usage=kept, tokens=recorded_total(usage))


def _size(request: Request) -> int | None:
    """A request's input tokens: its record's, else what it was sized at."""
    total = recorded_total(request.usage)
    return total if total is not None else request.tokens
