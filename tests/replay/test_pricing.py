"""The price of a replayed request, by hand: what the cache model reads, writes and leaves
uncached, at the model's price, for requests the autopilot rewrote.

The session records no usage, so every request is the cache model's and its tokens are the
byte estimates; the autopilot's thresholds are low enough that it cuts (soft equal to hard: no
nudges). Each expectation is written from the price table's numbers (Claude Sonnet 4.5: $3 a
million input tokens; reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x) and the rows' sizes.
"""

from __future__ import annotations

import pytest

from ipse.handoff._autopilot import AutopilotPolicy
from ipse.prefix import PrefixReport
from ipse.prefix._rows import Row
from ipse.replay import Replayed, ReplayOptions, replay_log

from .build import bodies, log_of

PRICE = 3.0 / 1_000_000  # claude-sonnet-4-5, per input token
READ, WRITE_5M, WRITE_1H = 0.1, 1.25, 2.0
CUTTING = ReplayOptions(policy=AutopilotPolicy(soft=15_000, hard=15_000), continuity=False)


def _cost(row: Row, write: float) -> float:
    tokens = row.predicted
    return PRICE * (tokens.cache_read * READ + tokens.cache_write * write + tokens.uncached)


def _rows(report: PrefixReport) -> dict[int, Row]:
    return {row.index: row for row in report.rows}


def _replayed(gaps: dict[int, float], ttl: str | None = None) -> Replayed:
    return replay_log(log_of(bodies(6, 20_000, ttl), gaps), CUTTING)


def _cuts(done: Replayed) -> list[int]:
    return [c.made_at for p in done.lines for c in p.cuts if c.made_at is not None]


def test_a_cut_writes_its_rewritten_prefix_once_and_the_requests_after_it_read_it() -> None:
    done = _replayed({})
    first, *_ = _cuts(done)
    rows = _rows(done.policy)
    cut, after, later = rows[first], rows[first + 1], rows[first + 2]
    assert cut.handoff is not None and cut.cause is not None and cut.cause.kind == "handoff"
    # the cut request reads what is unchanged at its front (tools, system prompt and the first
    # prompt, which the handoff keeps word for word: request 0's whole prefix) and writes the rest
    assert cut.predicted.cache_read == rows[0].predicted.total
    assert cut.predicted.cache_write == cut.predicted.total - rows[0].predicted.total
    assert cut.cost_usd == pytest.approx(_cost(cut, WRITE_5M))
    # ... once: the next request reads all of it and writes only what it adds
    assert after.predicted.cache_read == cut.predicted.total
    assert after.predicted.cache_write == after.predicted.total - cut.predicted.total
    assert after.cost_usd == pytest.approx(
        PRICE
        * (cut.predicted.total * READ + (after.predicted.total - cut.predicted.total) * WRITE_5M)
    )
    assert later.predicted.cache_read == after.predicted.total
    # the cut made the request smaller than the one the session sent
    assert cut.predicted.total < _rows(done.recorded)[first].predicted.total


def test_an_idle_gap_past_the_five_minutes_leaves_nothing_to_read() -> None:
    probe = _replayed({})
    first = _cuts(probe)[0]
    within = _rows(_replayed({first + 2: 290}).policy)[first + 2]
    past = _rows(_replayed({first + 2: 310}).policy)[first + 2]
    before = _rows(probe.policy)[first + 1]
    assert within.predicted.cache_read == before.predicted.total
    assert within.cost_usd == pytest.approx(_cost(within, WRITE_5M))
    # 310 s after the request before it: every entry has expired, all of it is written again
    assert past.predicted.cache_read == 0
    assert past.predicted.cache_write == past.predicted.total
    assert past.cost_usd == pytest.approx(PRICE * past.predicted.total * WRITE_5M)
    assert past.cause is not None and past.cause.kind == "ttl_expired"


def test_a_one_hour_write_is_priced_at_twice_the_input_and_read_after_half_an_hour() -> None:
    probe = _replayed({}, ttl="1h")
    first = _cuts(probe)[0]
    rows = _rows(_replayed({first + 1: 1800}, ttl="1h").policy)
    cut, after = rows[first], rows[first + 1]
    assert cut.ttl == "1h"
    assert cut.cost_usd == pytest.approx(_cost(cut, WRITE_1H))
    assert after.predicted.cache_read == cut.predicted.total  # 30 minutes: still cached
    assert after.cost_usd == pytest.approx(_cost(after, WRITE_1H))
    # the same gap with 5-minute writes reads nothing
    short = _rows(_replayed({first + 1: 1800}).policy)[first + 1]
    assert short.predicted.cache_read == 0


def test_the_requests_before_the_first_cut_are_the_recorded_ones() -> None:
    done = _replayed({})
    first = _cuts(done)[0]
    recorded, policy = _rows(done.recorded), _rows(done.policy)
    for index in range(first):
        assert policy[index].cost_usd == recorded[index].cost_usd
        assert done.sent[index] is done.log.requests[index]
