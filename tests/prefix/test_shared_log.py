"""The shared captured log: predictions against the usage Anthropic recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipse.prefix._actual import agrees
from ipse.prefix._report import PrefixReport, analyze
from ipse.prefix._requests import read_requests

from ..conftest import BIG_SESSION, HTTP_LOG, SHARED

pytestmark = SHARED

SIDE = (14, 16)  # 15.json and 17.json: web-search side requests of another conversation


@pytest.fixture(scope="module")
def report() -> PrefixReport:
    log = read_requests(HTTP_LOG)
    return analyze(log.requests, warnings=log.warnings)


def test_every_request_is_read_with_usage_and_time(report: PrefixReport) -> None:
    assert len(report.rows) == 18
    assert all(r.actual is not None for r in report.rows)
    assert report.ttl_modelled
    assert report.provider == "anthropic"


def test_agreement_is_computed_per_request(report: PrefixReport) -> None:
    computed = [agrees(r.predicted, r.actual) for r in report.rows if r.actual is not None]
    assert report.agreement is not None
    assert report.agreement.compared == len(computed)
    assert report.agreement.agreeing == sum(computed)
    # The first request read a prefix cached before the log began: no replay can know it.
    first = report.rows[0]
    assert first.actual is not None and first.actual.cache_read > 0
    assert first.predicted.cache_read == 0
    # Every later request of the main conversation agrees with what Anthropic reported.
    main = [r for r in report.rows[1:] if r.index not in SIDE]
    assert all(agrees(r.predicted, r.actual) for r in main if r.actual is not None)


def test_side_requests_do_not_break_the_main_conversation(report: PrefixReport) -> None:
    after_side = report.rows[15]  # follows side request 14; must read from request 13
    assert after_side.cause is None
    assert after_side.predicted.cache_read >= report.rows[13].predicted.cache_read
    side = report.rows[14]
    assert side.predicted.cache_read == 0  # nothing of it was seen before in this log
    assert side.actual is not None and side.actual.cache_read == 0
    second_side = report.rows[16]  # reads what the first side request wrote, as Anthropic did
    assert second_side.cause is None
    assert second_side.predicted.cache_read > 0
    assert second_side.actual is not None and second_side.actual.cache_read > 0


def test_no_loss_in_a_well_behaved_log(report: PrefixReport) -> None:
    summary = report.summary()
    assert summary["by_cause"] == {}
    assert summary["cost_lost_usd"] == 0
    assert 0.9 < summary["hit_rate"] <= 1


def test_o200k_counts_agree_as_well() -> None:
    log = read_requests(HTTP_LOG)
    counted = analyze(log.requests, tokenizer="o200k")
    assert counted.agreement is not None
    main = [r for r in counted.rows[1:] if r.index not in SIDE and r.actual is not None]
    assert all(agrees(r.predicted, r.actual) for r in main if r.actual is not None)


def test_claude_code_session_requests_rebuilt_per_assistant_turn() -> None:
    log = read_requests(Path(BIG_SESSION))
    assert log.format == "claude-code"
    assert len(log.requests) > 50
    assert all(r.body.get("cache_control") for r in log.requests)
    report = analyze(log.requests, warnings=log.warnings)
    assert report.agreement is not None and report.agreement.compared > 50
    assert report.agreement.share > 0.5
    kinds = {r.cause.kind for r in report.rows if r.cause is not None}
    assert kinds <= {
        "compaction",  # the first call after the compaction, named and reported apart
        "ttl_expired",
        "history_truncated",
        "message_edited",
        "no_breakpoint",
        "not_served",
    }
    for row in report.rows:  # every charged loss is one the record shows
        if row.cause is not None and row.actual is not None:
            assert row.actual.cache_read + row.lost_tokens <= row.ideal_read
    # Real misses the model does not predict: the record reads far less than was cached.
    served = [r for r in report.rows if r.cause and r.cause.kind == "not_served"]
    assert served and all(r.actual and r.lost_tokens > 10_000 for r in served)
