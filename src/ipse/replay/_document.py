"""A replay as one JSON-ready document (``ipse replay --json``): the session as recorded, as the
cache model prices it and with the policy; the policy's ratio and its bill at the recorded
prices; each cut and what it kept, the compactions, the targets and why a target was missed."""

from __future__ import annotations

from typing import Any

from ipse.replay._continuity import holds_to_summary
from ipse.replay._replay import Replayed
from ipse.replay._rewrite import Cut, PlannedLine
from ipse.replay._totals import Side, front_cost, side_of
from ipse.replay._why import before_cuts, conversation_split, kept_share, reasons

TARGET = 0.5  # the conversation's cost with the policy, at most this share of the recorded


def document(done: Replayed) -> dict[str, Any]:
    """The replay's document (see the module docstring)."""
    originals = {r.index: r for r in done.log.requests}
    recorded = side_of(done.recorded, done.log.requests, done.limits)
    modelled = side_of(done.modelled, done.log.requests, done.limits)
    policy = side_of(done.policy, [originals[r.index] for r in done.sent], done.limits)
    at_recorded = _at_recorded(recorded, modelled, policy)
    cuts = [_cut(p, c) for p in done.lines for c in p.cuts]
    ratio = _ratio(policy.conversation_usd, modelled.conversation_usd)
    return {
        "session": str(done.log.path),
        "format": done.log.format,
        "provider": done.recorded.provider,
        "policy": done.options.policy.to_json(),
        "requests": {
            "recorded": len(done.log.requests),
            "sent": len(done.sent),
            "rewritten": sum(1 for r in done.sent if r is not originals[r.index]),
            "compaction_calls_dropped": done.dropped,
            "compactions_prevented": done.prevented,
        },
        "recorded": recorded.to_json(),
        "recorded_as_modelled": modelled.to_json(),
        "with_policy": policy.to_json(),
        "with_policy_at_recorded": at_recorded,
        "ratio": {
            "conversation": ratio,
            "input": _ratio(policy.input_usd, modelled.input_usd),
            "bill": _ratio(at_recorded["bill_usd"], recorded.bill_usd),
        },
        "nudges": sum(len(p.nudges) for p in done.lines),
        "cuts": cuts,
        "lines": [_line(p) for p in done.lines],
        "compactions": done.compactions,
        "targets": _targets(ratio, recorded, at_recorded, policy, cuts, done),
        "why": _why(done, ratio),
        "calibration": done.calibration.to_json(),
        "agreement": done.recorded.agreement.to_json() if done.recorded.agreement else None,
        "notes": list(done.notes),
    }


def _at_recorded(recorded: Side, modelled: Side, policy: Side) -> dict[str, float]:
    """The policy's bill at the recorded prices: each recorded cost times the policy's ratio
    of it, both as the cache model has them; output as the requests it sends were billed."""
    conversation = recorded.conversation_usd * _share(
        policy.conversation_usd, modelled.conversation_usd
    )
    front = recorded.front_usd * _share(policy.front_usd, modelled.front_usd)
    # the recorded input with what the policy changes of each part (not the parts summed
    # anew: the recorded input less its front plus its front is not always the recorded input
    # to the last digit, and a policy that changes nothing bills the recorded input exactly)
    changed = (conversation - recorded.conversation_usd) + (front - recorded.front_usd)
    return {
        "input_usd": round(recorded.input_usd + changed, 6),
        "conversation_usd": round(conversation, 6),
        "front_usd": round(front, 6),
        "output_usd": round(policy.output_usd, 6),
        "bill_usd": round(recorded.input_usd + changed + policy.output_usd, 6),
    }


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 1.0


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole > 0 else None


def _cut(planned: PlannedLine, cut: Cut) -> dict[str, Any]:
    step = cut.event.step
    beyond = planned.beyond
    return {
        "conversation": planned.line.conversation,
        "request": cut.made_at,
        "message": cut.at,
        "tokens_before": step.tokens + beyond,
        "tokens_after": (step.tokens_after or 0) + beyond,
        "removed_calls": cut.removed_calls,
        "break_even_requests": step.break_even_turns,
        "continuity": cut.continuity,
    }


def _line(planned: PlannedLine) -> dict[str, Any]:
    """One line: its conversation, its requests, the limits and thresholds it was planned by
    (in the provider's tokens)."""
    nudge = planned.nudges[0].step if planned.nudges else None
    return {
        "conversation": planned.line.conversation,
        "requests": len(planned.line.members()),
        "stretches": len(planned.line.stretches),
        "window": planned.limits.window,
        "limit": planned.limits.limit,
        "unrecorded_tokens": planned.beyond,  # what the usage holds that the bytes do not show
        "soft": nudge.thresholds.soft + planned.beyond if nudge is not None else None,
        "hard": planned.hard,
        "cuts": len(planned.cuts),
        "nudges": len(planned.nudges),
    }


def _targets(
    ratio: float | None,
    recorded: Side,
    at_recorded: dict[str, float],
    policy: Side,
    cuts: list[dict[str, Any]],
    done: Replayed,
) -> dict[str, Any]:
    return {
        "conversation_at_most_half": ratio is not None and ratio <= TARGET,
        "bill_not_above_recorded": at_recorded["bill_usd"] <= round(recorded.bill_usd, 6),
        "no_request_above_limit": policy.above_limit == 0,
        "continuity_at_least_summary": holds_to_summary(cuts, done.compactions),
    }


def _why(done: Replayed, ratio: float | None) -> list[dict[str, Any]]:
    report = done.recorded
    fronts = {row.index: front_cost(report, row) for row in report.rows}
    first_cut: dict[str | None, int] = {}
    for planned in done.lines:
        made = [c.made_at for c in planned.cuts if c.made_at is not None]
        if made:
            first_cut[planned.line.conversation] = min(made)
    before, whole = before_cuts(report, first_cut, fronts)
    reads, rest = conversation_split(report)
    early = before / whole if whole > 0 else 1.0
    uncached = rest / (reads + rest) if reads + rest > 0 else 0.0
    kept = kept_share([c for p in done.lines for c in p.cuts])
    return reasons(ratio, done.options.policy.mode, early, uncached, kept)
