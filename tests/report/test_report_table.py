"""The table of the numbers behind the charts: every request a row; open on the page when it is
short, closed (parsed, not laid out until the reader opens it) when it is long."""

from __future__ import annotations

import re

from ipse.report._data import Point
from ipse.report._page import OPEN_TABLE_ROWS, _numbers_section


def _points(n: int) -> list[Point]:
    return [
        Point(
            index=i,
            time=None,
            model="m",
            context_tokens=100 + i,
            composition={"human_text": 10, "tool_results": 90 + i},
            tool_tokens={"Bash": 90 + i},
            cache_read=i,
            cache_write=1,
            uncached=99,
            cache_source="recorded",
            cause=None,
            cause_detail=None,
            lost_tokens=0,
            cost_lost_usd=0.0,
            marker=None,
            human_turn=i == 0,
        )
        for i in range(n)
    ]


def _details_tag(html: str) -> str:
    found = re.search(r"<details[^>]*>", html)
    assert found is not None
    return found.group(0)


def test_a_short_table_is_open() -> None:
    html = _numbers_section(_points(OPEN_TABLE_ROWS))
    assert _details_tag(html) == "<details open>"
    assert html.count("<tr>") == OPEN_TABLE_ROWS + 1  # the header row too


def test_a_long_table_starts_closed_and_holds_every_row() -> None:
    html = _numbers_section(_points(OPEN_TABLE_ROWS + 1))
    assert _details_tag(html) == "<details>"
    assert html.count("<tr>") == OPEN_TABLE_ROWS + 2
    assert f"{OPEN_TABLE_ROWS + 1} requests" in html
