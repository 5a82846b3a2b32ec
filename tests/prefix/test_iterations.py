"""A request whose usage lists its sampling iterations (a server-side compaction summarises the
conversation, then answers from the summary) is billed for every iteration; the top level of
its usage counts only the last. Its cost holds them all, and its loss is what a read could
have saved (the summarising pass is no loss)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipse.prefix import analyze, read_requests
from ipse.prefix._rules import prices, rules

from .sessions import OPUS, Session, text, usage


def _weighted(read: int, write: int, uncached: int) -> float:
    table = rules("anthropic")
    weighted = read * table.read_multiplier(OPUS) + write * table.write_multiplier("5m")
    return prices().price(OPUS, "anthropic")[0] * (weighted + uncached) / 1e6


def _compacting(tmp_path: Path, iterations: bool) -> Path:
    """Two calls, the second compacted on the server: its summarising pass read the 150,000
    tokens the first cached; its answer read the 20,000 of the front and wrote the summary."""
    s = Session()
    s.user("fix the failing test " * 40)
    s.assistant(text("a"), usage(0, 150_000), message_id="m1")
    s.user("go on " * 10)
    answer: dict[str, Any] = usage(20_000, 3_000)
    if iterations:
        answer["iterations"] = [
            {"type": "compaction", **usage(150_000, 0), "output_tokens": 3_500},
            {"type": "message", **usage(20_000, 3_000)},
        ]
    s.assistant(text("b"), answer, message_id="m2")
    return s.write(tmp_path / "compacting.jsonl")


def test_every_iteration_is_billed(tmp_path: Path) -> None:
    listed = analyze(read_requests(_compacting(tmp_path, iterations=True)).requests)
    row = listed.rows[1]
    assert row.compaction  # (reported apart, as a compaction call)
    assert row.cost_usd == pytest.approx(
        _weighted(20_000, 3_000, 3) + _weighted(150_000, 0, 3), rel=1e-9
    )
    assert listed.summary()["cost_usd"] == pytest.approx(
        _weighted(0, 150_000, 3) + row.cost_usd, abs=1e-6
    )
    # the loss is the same as without the listed iterations: the summarising pass is billed
    # at its ideal too
    plain = analyze(read_requests(_compacting(tmp_path, iterations=False)).requests).rows[1]
    assert row.cost_lost_usd == pytest.approx(plain.cost_lost_usd, abs=1e-12)
    assert row.cost_usd > plain.cost_usd and not plain.compaction


def test_iterations_that_add_nothing_change_nothing(tmp_path: Path) -> None:
    s = Session()
    s.user("fix the failing test " * 40)
    used = usage(0, 20_000)
    used["iterations"] = [{"type": "message", **usage(0, 20_000)}]
    s.assistant(text("a"), used, message_id="m1")
    row = analyze(read_requests(s.write(tmp_path / "one.jsonl")).requests).rows[0]
    assert row.cost_usd == pytest.approx(_weighted(0, 20_000, 3), rel=1e-9)
