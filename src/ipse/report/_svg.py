"""Charts as inline SVG, written by hand: a line with markers, and stacked bars.

Inline SVG needs no script, font or style from anywhere, prints, and opens in any browser years
from now; a charting library would add hundreds of kilobytes to every page for three charts.
Every drawn data point carries ``data-index`` (its request) and a ``<title>`` (the tooltip), so
the page stays inspectable and the tests can count what was drawn. Long logs are drawn at most
`MAX_BARS` bars wide: neighbouring requests share a bar (the largest of them), and the table
below the charts still lists every request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 960
HEIGHT = 260
PAD_LEFT = 64
PAD_BOTTOM = 28
PAD_TOP = 12
MAX_BARS = 600


@dataclass(frozen=True, slots=True)
class Series:
    """One stacked layer: its name, its colour class, and one value per request."""

    name: str
    css: str
    values: Sequence[int]


def axis_ticks(peak: int) -> list[int]:
    """The y axis's ticks for values up to ``peak``: 0 and at most four more, evenly spaced
    by a round step (1, 2 or 5 times a power of ten), the last at or above ``peak``."""
    peak = max(peak, 0)
    power = 1
    while True:
        for step in (power, 2 * power, 5 * power):
            if -(-peak // step) <= 4:
                return [step * k for k in range(max(1, -(-peak // step)) + 1)]
        power *= 10


def _frame(title: str, ticks: list[int], count: int) -> list[str]:
    inner = HEIGHT - PAD_BOTTOM - PAD_TOP
    top = ticks[-1]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" class="chart">',
        f"<title>{escape(title)}</title>",
    ]
    for value in ticks:
        y = PAD_TOP + inner - inner * value / top
        parts.append(
            f'<line class="grid" x1="{PAD_LEFT}" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{tick_label(value)}</text>"
        )
    parts.append(
        f'<text class="axis" x="{PAD_LEFT}" y="{HEIGHT - 6}">request 0</text>'
        f'<text class="axis" x="{WIDTH}" y="{HEIGHT - 6}" text-anchor="end">'
        f"request {max(count - 1, 0)}</text>"
    )
    return parts


def tick_label(value: int) -> str:
    """``value`` written short and exactly: 500, 1.5k, 2k, 2.5M (never rounded, so distinct
    ticks read as distinct numbers)."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if value >= size:
            whole, rest = divmod(value, size)
            if not rest:
                return f"{whole}{unit}"
            digits = str(rest).rjust(len(str(size)) - 1, "0").rstrip("0")
            return f"{whole}.{digits}{unit}"
    return str(value)


def _buckets(count: int) -> list[range]:
    """Request indices per bar: one each, or runs of neighbours when there are too many."""
    if count <= MAX_BARS:
        return [range(i, i + 1) for i in range(count)]
    size = -(-count // MAX_BARS)
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


def line_chart(
    title: str,
    values: Sequence[int],
    markers: Mapping[int, str],
    labels: Sequence[str],
) -> str:
    """Context size per request: a polyline, a dot per (bucket of) request(s), marked resets."""
    count = len(values)
    ticks = axis_ticks(max(values, default=0))
    top = ticks[-1]
    inner_w = WIDTH - PAD_LEFT
    inner_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    buckets = _buckets(count)
    parts = _frame(title, ticks, count)
    coords = []
    dots = []
    for slot, bucket in enumerate(buckets):
        index = max(bucket, key=lambda i: values[i])
        x = PAD_LEFT + inner_w * (slot + 0.5) / max(len(buckets), 1)
        y = PAD_TOP + inner_h - inner_h * values[index] / top
        coords.append(f"{x:.1f},{y:.1f}")
        dots.append(
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="2.5" data-index="{index}">'
            f"<title>{escape(labels[index])}</title></circle>"
        )
        for marked in (i for i in bucket if i in markers):
            dots.append(
                f'<line class="marker {escape(markers[marked])}" x1="{x:.1f}" x2="{x:.1f}" '
                f'y1="{PAD_TOP}" y2="{PAD_TOP + inner_h}" data-index="{marked}">'
                f"<title>{escape(markers[marked])} before request {marked}</title></line>"
            )
    if coords:
        parts.append(f'<polyline class="line" points="{" ".join(coords)}"/>')
    parts.extend(dots)
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars(title: str, layers: Sequence[Series], labels: Sequence[str]) -> str:
    """One bar per (bucket of) request(s), its layers stacked bottom to top."""
    count = len(labels)
    totals = [sum(layer.values[i] for layer in layers) for i in range(count)]
    ticks = axis_ticks(max(totals, default=0))
    top = ticks[-1]
    inner_w = WIDTH - PAD_LEFT
    inner_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    buckets = _buckets(count)
    width = inner_w / max(len(buckets), 1)
    parts = _frame(title, ticks, count)
    for slot, bucket in enumerate(buckets):
        index = max(bucket, key=lambda i: totals[i])
        x = PAD_LEFT + width * slot
        y = float(PAD_TOP + inner_h)
        parts.append(f'<g class="bar" data-index="{index}"><title>{escape(labels[index])}</title>')
        for layer in layers:
            value = layer.values[index]
            if value <= 0:
                continue
            height = inner_h * value / top
            y -= height
            parts.append(
                f'<rect class="{layer.css}" x="{x + width * 0.1:.2f}" y="{y:.2f}" '
                f'width="{max(width * 0.8, 0.5):.2f}" height="{height:.2f}"/>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def legend(layers: Sequence[Series]) -> str:
    """The names of the layers with their colours."""
    items = "".join(
        f'<span class="key"><svg width="12" height="12" aria-hidden="true">'
        f'<rect class="{layer.css}" width="12" height="12"/></svg> {escape(layer.name)}</span>'
        for layer in layers
    )
    return f'<p class="legend">{items}</p>'


__all__ = ["MAX_BARS", "Series", "legend", "line_chart", "stacked_bars"]
