"""A request without usage of its own, sized from another (`Request.tokens`), the front of a
session fitted once and reused (``front_fit``), each row's fixed front (`Row.front`), and the
price of a split of tokens (`token_cost`)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ipse.prefix import analyze, read_requests, token_cost
from ipse.prefix._simulate import Tokens

from .sessions import Session, text, tool_use, usage
from .util import body, requests


def test_a_request_sized_without_usage_is_modelled_at_that_size() -> None:
    plain = requests([body(1), body(2)])
    sized = [msgspec.structs.replace(r, tokens=50_000 + 10_000 * r.index) for r in plain]
    rows = analyze(sized, tokenizer="bytes").rows
    assert [row.predicted.total for row in rows] == [50_000, 60_000]
    assert all(row.actual is None for row in rows)
    # unsized, the same requests are their byte estimates
    assert analyze(plain, tokenizer="bytes").rows[0].predicted.total < 20_000


def test_the_front_is_the_tools_the_system_prompt_and_the_settings() -> None:
    rows = analyze(requests([body(1), body(3)]), tokenizer="bytes").rows
    assert rows[0].front == rows[1].front > 0
    # the first request wrote up to its system prompt's breakpoint, then its messages
    first = rows[0]
    assert first.front < first.predicted.total
    sized = analyze(
        [msgspec.structs.replace(r, tokens=2 * rows[r.index].predicted.total)
         for r in requests([body(1), body(3)])],
        tokenizer="bytes",
    ).rows  # fmt: skip
    assert sized[0].front == pytest.approx(2 * first.front, abs=2)


def _session(tmp_path: Path) -> Path:
    s = Session()
    s.user("fix the tests " * 50)
    s.assistant(tool_use("c1"), usage(0, 24_000), message_id="m1")
    s.result("c1", "output " * 900)
    s.assistant(text("done"), usage(24_000, 1_900), message_id="m2")
    s.user("and the docs " * 50)
    s.assistant(text("done too"), usage(25_900, 700), message_id="m3")
    return s.write(tmp_path / "session.jsonl")


def test_a_front_fitted_once_prices_a_rewrite_of_the_session_alike(tmp_path: Path) -> None:
    log = read_requests(_session(tmp_path))
    report = analyze(log.requests)
    scale, front = report.front_fit
    assert front > 0 and scale > 0
    assert all(row.front >= front for row in report.rows)
    unrecorded = [msgspec.structs.replace(r, usage=None, tokens=None) for r in log.requests]
    fitted = analyze(unrecorded, tokenizer="bytes", front_fit=report.front_fit)
    assert fitted.front_fit == report.front_fit
    # the front as the record has it, less what each record's own scale moves its placeholder
    for mine, theirs in zip(fitted.rows, report.rows, strict=True):
        assert abs(mine.front - theirs.front) <= 10
    assert analyze(unrecorded, tokenizer="bytes").front_fit == (1.0, 0)  # (none to fit)


def test_token_cost_prices_each_kind_at_its_multiplier() -> None:
    tokens = Tokens(cache_read=100_000, cache_write=10_000, uncached=1_000)
    # claude-opus-4-6: $5 a million; reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x
    assert token_cost("anthropic", "claude-opus-4-6", tokens, "5m") == pytest.approx(
        5 * (10_000 + 12_500 + 1_000) / 1e6
    )
    assert token_cost("anthropic", "claude-opus-4-6", tokens, "1h") == pytest.approx(
        5 * (10_000 + 20_000 + 1_000) / 1e6
    )
