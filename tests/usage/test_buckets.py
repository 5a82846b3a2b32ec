"""Days, weeks, months and 5-hour blocks from the ledger's quarter hours are those of the calls.

The ledger keeps calls summed by quarter hour (with the first and last time of each); these
properties check that grouping it gives what grouping every call by its own time gives, in
zones whose offsets are not whole hours, for blocks with gaps and overlaps of every size."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.usage import group, total
from ipse.usage._call import Call
from ipse.usage._cost import Costs
from ipse.usage._ledger import ledger_of

ZONES = [ZoneInfo(n) for n in ("UTC", "Asia/Kolkata", "Australia/Eucla", "America/St_Johns")]
START = datetime(2026, 3, 1).timestamp()


@st.composite
def calls(draw: st.DrawFn) -> list[Call]:
    gaps = draw(st.lists(st.sampled_from([0, 1, 59, 600, 899, 900, 3599, 3600, 4 * 3600,
                                          5 * 3600 - 1, 5 * 3600, 5 * 3600 + 1, 26 * 3600]),
                         min_size=1, max_size=40))  # fmt: skip
    out, time = [], START + draw(st.integers(0, 7 * 24 * 3600))
    for number, gap in enumerate(gaps):
        time += gap + draw(st.floats(0, 0.999))
        out.append(Call(f"k{number}", time, draw(st.sampled_from(["claude-opus-4-6", "gpt-5"])),
                        "anthropic", "claude-code", "p", draw(st.sampled_from(["s1", "s2"])), "",
                        draw(st.integers(0, 9)), 0, 0, draw(st.integers(0, 99)), 1))  # fmt: skip
    return out


def _blocks_of(items: list[Call]) -> list[list[Call]]:
    """The 5-hour blocks, call by call: a block starts on the hour of its first call and ends
    five hours later or after five hours without a call."""
    blocks: list[list[Call]] = []
    start = last = 0.0
    for call in sorted(items, key=lambda c: c.time):
        if not blocks or call.time >= start + 5 * 3600 or call.time - last >= 5 * 3600:
            start = call.time // 3600 * 3600
            blocks.append([])
        blocks[-1].append(call)
        last = call.time
    return blocks


@settings(max_examples=150, deadline=None)
@given(calls(), st.sampled_from(ZONES), st.sampled_from(["day", "week", "month"]))
def test_days_weeks_and_months_are_the_calls_own(
    items: list[Call], zone: ZoneInfo, by: str
) -> None:
    ledger = ledger_of(items, Costs())
    expected: dict[str, tuple[int, int]] = {}
    for call in items:
        day = datetime.fromtimestamp(call.time, zone).date()
        label = {"day": day.isoformat(), "month": day.isoformat()[:7],
                 "week": (day - timedelta(days=day.weekday())).isoformat()}[by]  # fmt: skip
        calls_, reads = expected.get(label, (0, 0))
        expected[label] = (calls_ + 1, reads + call.read)
    got = {b.label: (b.calls, b.read) for b in group(ledger, by, zone=zone)}
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(calls())
def test_blocks_are_the_calls_own(items: list[Call]) -> None:
    ledger = ledger_of(items, Costs())
    expected = [(len(b), sum(c.read for c in b)) for b in _blocks_of(items)]
    got = [(b.calls, b.read) for b in group(ledger, "block")]
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(calls(), st.sampled_from(ZONES), st.integers(0, 8), st.integers(0, 8))
def test_since_and_until_keep_the_days_between(
    items: list[Call], zone: ZoneInfo, after: int, length: int
) -> None:
    first = datetime.fromtimestamp(START, zone).date() + timedelta(days=after)
    last = first + timedelta(days=length)
    kept = [c for c in items if first <= datetime.fromtimestamp(c.time, zone).date() <= last]
    summed = total(group(ledger_of(items, Costs()), "day", zone=zone, since=first, until=last))
    assert (summed.calls, summed.read) == (len(kept), sum(c.read for c in kept))
