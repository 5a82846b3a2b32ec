"""Relevance decay: a cap on live facts, pinned facts stay, expired facts leave, reasons kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
import twin_strategies as ts
from hypothesis import given
from hypothesis import strategies as st

from ipse.errors import InputError
from ipse.twin import TwinState, decay
from ipse.twin._apply import apply_transitions
from ipse.twin._decay import DecayPolicy, relevance
from ipse.twin._transitions import establish_fact, use_fact

T0 = ts.T0
DAY = timedelta(days=1)


def three_facts() -> TwinState:
    s = TwinState.new("ada", "Dana", at=T0)
    s = establish_fact(s, "old", at=T0)
    s = establish_fact(s, "pinned old", pinned=True, at=T0)
    s = establish_fact(s, "recent", at=T0 + 5 * DAY)
    return use_fact(s, "old", at=T0 + DAY)


def test_relevance_halves_each_half_life() -> None:
    fact = three_facts().facts[2]
    assert relevance(fact, fact.last_used_at, 86400) == 1.0
    assert relevance(fact, fact.last_used_at + DAY, 86400) == pytest.approx(0.5)
    assert relevance(fact, fact.last_used_at + 2 * DAY, 86400) == pytest.approx(0.25)


def test_over_the_cap_the_least_relevant_unpinned_fact_leaves() -> None:
    state, gone = decay(three_facts(), DecayPolicy(max_facts=2, half_life=86400), T0 + 6 * DAY)
    assert [f.text for f in state.facts] == ["pinned old", "recent"]
    assert [(e.text, e.reason) for e in gone] == [("old", "decayed")]
    assert gone[0].relevance == pytest.approx(0.5**5)


def test_pinned_facts_never_decay() -> None:
    state, gone = decay(three_facts(), DecayPolicy(max_facts=0, half_life=86400), T0 + 6 * DAY)
    assert [f.text for f in state.facts] == ["pinned old"]
    assert {e.text for e in gone} == {"old", "recent"}


def test_no_cap_no_change() -> None:
    s = three_facts()
    assert decay(s, DecayPolicy(), T0 + 600 * DAY) == (s, ())


def test_expired_facts_leave_on_the_next_transition() -> None:
    s = establish_fact(
        TwinState.new("ada", "Dana", at=T0), "on holiday", expires_at=T0 + DAY, at=T0
    )
    applied = apply_transitions(s, [{"op": "make_commitment", "text": "be brief"}], at=T0 + 2 * DAY)
    assert applied.state.facts == ()
    assert applied.notes == [
        {
            "event": "fact_left",
            "fact_id": s.facts[0].id,
            "text": "on holiday",
            "reason": "expired",
            "relevance": 0.0,
            "at": "2025-01-03T00:00:00Z",
        }
    ]


def test_superseded_facts_are_not_counted_and_stay() -> None:
    s = apply_transitions(
        TwinState.new("ada", "Dana", at=T0),
        [{"op": "establish_fact", "text": "A"}, {"op": "supersede_fact", "fact": "A", "text": "B"}],
        at=T0,
    ).state
    state, gone = decay(s, DecayPolicy(max_facts=1), T0)
    assert gone == () and len(state.facts) == 2


@given(ts.states(), st.integers(0, 5), st.integers(0, 800))
def test_cap_property(state: TwinState, cap: int, days: int) -> None:
    at = state.as_of + timedelta(days=days)
    after, gone = decay(state, DecayPolicy(max_facts=cap, half_life=7 * 86400), at)
    live = after.live_facts(at)
    pinned = [f for f in live if f.pinned]
    assert len(live) <= max(cap, len(pinned))
    assert {f.id for f in after.facts} | {e.fact_id for e in gone} == {f.id for f in state.facts}
    assert not any(e.reason == "decayed" and _pinned(state, e.fact_id) for e in gone)
    assert decay(after, DecayPolicy(max_facts=cap, half_life=7 * 86400), at)[1] == ()


def _pinned(state: TwinState, fact_id: str) -> bool:
    return any(f.id == fact_id and f.pinned for f in state.facts)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_facts": -1}, "max_facts"),
        ({"half_life": 0}, "half_life"),
        ({"max_facts": True}, "max_facts"),
    ],
)
def test_bad_policy(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError, match=field):
        DecayPolicy(**kwargs)  # type: ignore[arg-type]


@given(st.integers(min_value=2, max_value=12), st.integers(min_value=0, max_value=11))
def test_facts_of_one_batch_leave_in_the_order_they_were_established(n: int, cap: int) -> None:
    """One apply establishes n facts at the same time: over the cap the first ones leave first."""
    texts = [f"fact {i}{'x' * (i * 7 % 5)}" for i in range(n)]
    records = [{"op": "establish_fact", "text": text} for text in texts]
    applied = apply_transitions(
        TwinState.new("ada", "Dana", at=T0), records, policy=DecayPolicy(max_facts=cap), at=T0
    )
    leaving = max(0, n - cap)
    assert [e.text for e in applied.evictions] == texts[:leaving]
    assert [f.text for f in applied.state.live_facts()] == texts[leaving:]
