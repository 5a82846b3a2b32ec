"""Fitting resume's output into a token budget (a pure transform)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ipse._tokens import CharCounter, default_counter
from ipse.errors import UsageError
from ipse.statedir._budget import TRIM_MARK, Section, fit, render
from tests.statedir.conftest import RunIpse

count = CharCounter().count
bodies = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)


def _sections(texts: list[str]) -> list[Section]:
    names = ["00_goal.md", "10_invariants.md", "99_next.md", "last WAL entry"]
    return [
        Section(name, body, priority, order, name == "10_invariants.md")
        for order, (priority, name, body) in enumerate(zip(range(4), names, texts, strict=False))
    ]


@given(st.lists(bodies, min_size=1, max_size=4), st.integers(1, 600))
def test_output_never_exceeds_the_budget(texts: list[str], budget: int) -> None:
    text, _ = fit("header\n", _sections(texts), budget, count)
    assert count(text) <= budget


@given(st.lists(bodies, min_size=1, max_size=4))
def test_a_large_budget_changes_nothing(texts: list[str]) -> None:
    sections = _sections(texts)
    full = render("header\n", sections)
    assert fit("header\n", sections, count(full), count) == (full, [])


def test_trimming_notes_what_was_cut_with_the_real_counter() -> None:
    goal = "# Goal\n\nShip the thing.\n"
    invariants = "# Invariants\n\n" + "".join(
        f"- rule {i}: never do thing {i}\n  Reason: it broke {i}\n" for i in range(200)
    )
    sections = [
        Section("00_goal.md", goal, 0, 0),
        Section("10_invariants.md", invariants, 1, 1, keep_tail=True),
        Section("99_next.md", "Write the parser\n", 2, 2),
    ]
    counter = default_counter()
    text, trimmed = fit("head\n", sections, 300, counter.count)
    assert counter.count(text) <= 300
    assert "Ship the thing." in text
    assert TRIM_MARK in text
    assert "rule 199" in text  # the newest invariants are kept
    assert "rule 0:" not in text
    assert "10_invariants.md" in trimmed
    assert "output kept within 300 tokens" in text


def _with_required(texts: list[str]) -> list[Section]:
    return [
        Section(s.title, s.body, s.priority, s.order, s.keep_tail, s.title in _REQUIRED)
        for s in _sections(texts)
    ]


_REQUIRED = ("00_goal.md", "99_next.md")


@given(st.lists(bodies, min_size=4, max_size=4), st.integers(1, 600))
def test_required_sections_are_kept_whole_or_the_budget_is_refused(
    texts: list[str], budget: int
) -> None:
    sections = _with_required(texts)
    try:
        text, left_out = fit("header\n", sections, budget, count)
    except UsageError as exc:
        assert "too small" in str(exc)
        needed = int(str(exc).rsplit(" ", 1)[1].rstrip(")"))
        assert needed > budget
        text, _ = fit("header\n", sections, needed, count)  # the figure it names does work
        assert count(text) <= needed
        return
    assert count(text) <= budget
    for section in sections:
        if section.required:
            assert section.title not in left_out
            assert f"=== {section.title} ===\n{section.body.rstrip()}\n" in text


def test_a_tiny_budget_from_the_cli_names_the_smallest_that_works(
    state: Path, cli: RunIpse
) -> None:
    result = cli("state", "resume", "--dir", str(state), "--budget", "5")
    assert result.returncode == 2
    assert "too small" in result.stderr and "at least" in result.stderr
    needed = int(result.stderr.rsplit("at least ", 1)[1].split(")")[0])
    fitted = cli("state", "resume", "--dir", str(state), "--budget", str(needed))
    assert fitted.returncode == 0
    assert "Port the parser" in fitted.stdout
    assert "=== 99_next.md ===" in fitted.stdout
