"""The charts' y axes: ticks distinct, evenly spaced, covering the largest value, and each
labelled with exactly its value (no rounding that makes 1.5k read as 2k)."""

from __future__ import annotations

import itertools
import re
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ipse.report._svg import Series, axis_ticks, line_chart, stacked_bars, tick_label

_UNITS = {"k": 1_000, "M": 1_000_000}


def _value(label: str) -> int:
    if label[-1] in _UNITS:
        exact = Decimal(label[:-1]) * _UNITS[label[-1]]
        assert exact == int(exact)
        return int(exact)
    return int(label)


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'<text class="axis"[^>]*text-anchor="end">([^<]*)</text>', svg)[:-1]


@given(st.integers(0, 10**12))
def test_ticks_are_distinct_even_and_cover_the_peak(peak: int) -> None:
    ticks = axis_ticks(peak)
    assert ticks[0] == 0 and ticks[-1] >= peak and 2 <= len(ticks) <= 5
    steps = {b - a for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1 and steps.pop() > 0
    labels = [tick_label(t) for t in ticks]
    assert len(set(labels)) == len(labels)
    assert [_value(label) for label in labels] == ticks


@given(st.integers(0, 10**12))
def test_every_label_reads_as_its_value(value: int) -> None:
    assert _value(tick_label(value)) == value


def test_the_charts_draw_those_ticks() -> None:
    values = [0, 700, 1_400, 2_000]
    labels = [f"request {i}" for i in range(4)]
    expected = ["0", "500", "1k", "1.5k", "2k"]  # (was 0, 500, 1k, 2k, 2k)
    assert _axis_labels(line_chart("t", values, {}, labels)) == expected
    bars = stacked_bars("t", [Series("a", "k-a", values)], labels)
    assert _axis_labels(bars) == expected
