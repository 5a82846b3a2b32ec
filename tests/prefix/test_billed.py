"""The cost analysis against the bill: each TTL and write price as the record gives it, every
billed call counted once and in time order, losses from 1,000 tokens, compaction apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.prefix import analyze, read_requests
from ipse.prefix._rules import prices

from .sessions import Session, text, tool_use, usage

PRICE = prices().price("claude-opus-4-6", "anthropic")[0]  # base input, USD per million


def _report(path: Path):  # type: ignore[no-untyped-def]
    log = read_requests(path)
    return analyze(log.requests, warnings=log.warnings)


def _hour_session(tmp_path: Path, gap: float, second: dict[str, int]) -> Path:
    """Two calls on a 1-hour chain (the record's writes are 1-hour writes), ``gap`` seconds
    apart, the second with the usage given."""
    s = Session()
    s.user("start the work " * 40)
    s.assistant(tool_use("t1"), usage(0, 30_000, hour=True), message_id="m1")
    s.result("t1")
    s.assistant(text("done"), usage(30_000, 400, hour=True), message_id="m2")
    s.user("and now the next part " * 20, after=gap)
    s.assistant(text("ok"), second, message_id="m3")
    return s.write(tmp_path / "hour.jsonl")


def test_a_one_hour_chain_is_alive_after_31_minutes(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 31 * 60, usage(30_400, 300, hour=True)))
    last = report.rows[-1]
    assert last.cause is None
    assert last.predicted_cause is None  # no expiry predicted that the record contradicts
    assert last.agrees is True
    assert last.predicted.cache_read > 0


def test_one_hour_writes_cost_twice_the_base_input(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 60, usage(30_400, 300, hour=True)))
    first = report.rows[0]
    assert first.cost_usd == pytest.approx(PRICE * (30_000 * 2.0 + 3) / 1e6)
    five = report.rows[-1]
    assert five.cost_usd == pytest.approx(PRICE * (30_400 * 0.1 + 300 * 2.0 + 3) / 1e6)


def test_a_rebuild_on_a_one_hour_chain_is_priced_at_the_one_hour_write(tmp_path: Path) -> None:
    report = _report(_hour_session(tmp_path, 20 * 60, usage(0, 30_700, hour=True)))
    last = report.rows[-1]
    assert last.cause is not None
    assert last.cause.kind != "ttl_expired"  # 20 minutes is inside the hour
    assert last.lost_tokens == 30_400
    assert last.cost_lost_usd == pytest.approx(PRICE * 30_400 * (2.0 - 0.1) / 1e6, rel=1e-3)


def test_a_five_minute_chain_still_expires(tmp_path: Path) -> None:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 20, after=31 * 60)
    s.assistant(text("b"), usage(0, 30_100), message_id="m2")
    report = _report(s.write(tmp_path / "five.jsonl"))
    last = report.rows[-1]
    assert last.cause is not None and last.cause.kind == "ttl_expired"
    assert last.cost_lost_usd == pytest.approx(PRICE * 30_000 * (1.25 - 0.1) / 1e6, rel=1e-2)
