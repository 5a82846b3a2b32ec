"""Tables in human output: a long one is drawn by ipse itself, exactly as rich would draw it
when it fits, cut to the console's width when it does not, and one line per row whatever its
cells hold."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.cli import _output
from ipse.cli._output import print_table

CELL = st.text(
    alphabet=st.sampled_from([*"ab #$[/]0123456789,.-", "日", "本", "é", "ü", "—", "…", "\u00a0"]),
    max_size=12,
)


def render(
    title: str,
    columns: list[tuple[str, str]],
    rows: list[list[str]],
    *,
    direct: bool,
    width: int = 10_000,
    patch: pytest.MonkeyPatch,
) -> str:
    """The table as printed on a piped console ``width`` cells wide, drawn by ipse (``direct``)
    or by rich."""
    buffer = io.StringIO()
    out = _output._console_class()(
        file=buffer, highlight=False, markup=False, emoji=False, width=width, color_system=None
    )
    patch.setattr(_output, "LONG_TABLE_ROWS", -1 if direct else 10**9)
    print_table(out, title, columns, rows)
    return buffer.getvalue()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_long_table_is_drawn_as_rich_draws_it(data: st.DataObject) -> None:
    count = data.draw(st.integers(1, 5))
    justify = st.sampled_from(["left", "right"])
    columns = [(data.draw(CELL), data.draw(justify)) for _ in range(count)]
    rows = data.draw(st.lists(st.lists(CELL, min_size=count, max_size=count), max_size=6))
    title = data.draw(st.text(alphabet="abc de", max_size=30))
    with pytest.MonkeyPatch.context() as patch:
        direct = render(title, columns, rows, direct=True, patch=patch)
        drawn_by_rich = render(title, columns, rows, direct=False, patch=patch)
    assert direct == drawn_by_rich


def _long(cause: str = "x" * 60) -> tuple[list[tuple[str, str]], list[list[str]]]:
    columns = [("#", "right"), ("model", "left"), ("cause", "left"), ("lost", "right")]
    rows = [[str(i), "claude-opus-4-6", cause, f"{i * 1000:,}"] for i in range(300)]
    return columns, rows


def test_on_a_narrow_console_the_widest_text_columns_are_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    columns, rows = _long()
    text = render("t", columns, rows, direct=True, width=60, patch=monkeypatch)
    lines = text.splitlines()
    assert len(lines) == 1 + 4 + 300
    assert all(len(line) <= 60 for line in lines)
    assert "\u2026" in lines[5] and "299" in lines[-2] and "299,000" in lines[-2]


def test_when_cutting_cannot_make_it_fit_rich_lays_it_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    columns, rows = _long()
    monkeypatch.setattr(_output, "LONG_TABLE_ROWS", 10)
    buffer = io.StringIO()
    out = _output._console_class()(file=buffer, width=24, color_system=None)
    print_table(out, "t", columns, rows)
    assert all(len(line) <= 24 for line in buffer.getvalue().splitlines())


def test_cells_of_a_long_table_stay_on_one_line_with_controls_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    columns, rows = _long(cause="a\nb\x1b[2J\tc")
    text = render("t", columns, rows, direct=True, patch=monkeypatch)
    assert len(text.splitlines()) == 1 + 4 + 300
    assert "\x1b" not in text and "\\x1b[2J" in text and "a\\x0ab" in text
