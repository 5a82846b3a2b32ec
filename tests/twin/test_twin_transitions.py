"""Transitions: each returns a new state; bad references are refused, naming the field."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import twin_strategies as ts
from hypothesis import given

from ipse.errors import InputError
from ipse.twin import TwinState, establish_fact
from ipse.twin._apply import apply_transitions
from ipse.twin._schema import dump_state, load_snapshot
from ipse.twin._transitions import (
    apply_op,
    close_loop,
    make_commitment,
    open_loop,
    set_active_loop,
    set_counterparty,
    supersede_fact,
    use_fact,
)

T0 = ts.T0
T1 = T0 + timedelta(hours=1)


def fresh() -> TwinState:
    return TwinState.new("ada", "Dana", at=T0)


def test_establish_is_idempotent_in_identity() -> None:
    s = establish_fact(fresh(), "prefers email", at=T0)
    again = establish_fact(s, "prefers email", at=T1)
    assert len(again.facts) == 1
    assert again.facts[0].established_at == T0
    assert again.facts[0].last_used_at == T1
    assert again.as_of == T1


def test_supersede_invalidates_never_deletes() -> None:
    s = establish_fact(fresh(), "lives in Lyon", pinned=True, at=T0)
    s2 = supersede_fact(s, "lives in Lyon", "lives in Paris", at=T1)
    old, new = s2.facts
    assert old.text == "lives in Lyon" and old.superseded_by == new.id
    assert new.text == "lives in Paris" and new.pinned and new.active
    assert [f.text for f in s2.live_facts()] == ["lives in Paris"]
    with pytest.raises(InputError, match="already superseded"):
        supersede_fact(s2, old.id, "lives in Nice", at=T1)
    assert s.facts[0].superseded_by is None  # the input state is untouched


def test_reestablishing_a_superseded_fact_revives_it() -> None:
    s = supersede_fact(establish_fact(fresh(), "A", at=T0), "A", "B", at=T0)
    s = establish_fact(s, "A", at=T1)
    assert {f.text for f in s.live_facts()} == {"A", "B"}


def test_commitments_dedupe() -> None:
    s = make_commitment(make_commitment(fresh(), "be brief", at=T0), "be brief", at=T1)
    assert s.commitments == ("be brief",)


def test_loops() -> None:
    s = open_loop(fresh(), "refund", at=T0)
    s = open_loop(s, "comparison", active=False, at=T0)
    assert s.loop(s.active_loop or "").text == "refund"  # type: ignore[union-attr]
    s = set_active_loop(s, "comparison", at=T1)
    assert s.loop(s.active_loop or "").text == "comparison"  # type: ignore[union-attr]
    s = close_loop(s, "comparison", at=T1)
    assert [lp.text for lp in s.open_loops] == ["refund"]
    assert s.loop(s.active_loop or "").text == "refund"  # type: ignore[union-attr]
    s = close_loop(s, s.open_loops[0].id, at=T1)
    assert s.open_loops == () and s.active_loop is None


def test_first_loop_is_active_even_when_not_asked() -> None:
    s = open_loop(fresh(), "refund", active=False, at=T0)
    assert s.active_loop == s.open_loops[0].id


def test_set_counterparty_and_use_fact() -> None:
    s = set_counterparty(fresh(), "Eve", at=T0)
    assert s.counterparty.account == "Eve"
    s = use_fact(establish_fact(s, "x", at=T0), "x", at=T1)
    assert s.facts[0].last_used_at == T1


@pytest.mark.parametrize(
    ("op", "args", "message"),
    [
        ("close_loop", {"loop": "nope"}, "loop: unknown loop 'nope'"),
        ("set_active_loop", {"loop": "nope"}, "loop: unknown loop"),
        ("supersede_fact", {"fact": "nope", "text": "x"}, "fact: unknown fact 'nope'"),
        ("use_fact", {"fact": "nope"}, "fact: unknown fact"),
        ("establish_fact", {}, "text: missing"),
        ("establish_fact", {"text": "  "}, "text: expected a non-empty string"),
        ("establish_fact", {"text": 5}, "text: expected a string"),
        ("establish_fact", {"text": "x", "pinned": "yes"}, "pinned: expected true or false"),
        ("establish_fact", {"text": "x", "expires_at": "soon"}, "expires_at: not an ISO-8601"),
        ("establish_fact", {"text": "x", "colour": "red"}, "colour: unknown argument"),
        ("fly", {}, "op: unknown transition 'fly'"),
    ],
)
def test_bad_transitions(op: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        apply_op(fresh(), op, args, at=T0)


def test_batch_is_all_or_nothing_and_names_the_record() -> None:
    s = fresh()
    records = [{"op": "make_commitment", "text": "be brief"}, {"op": "close_loop", "loop": "x"}]
    with pytest.raises(InputError, match="transition 2: loop: unknown loop"):
        apply_transitions(s, records, at=T0)
    assert s.commitments == ()
    with pytest.raises(InputError, match="transition 1: op: missing"):
        apply_transitions(s, [{"text": "x"}], at=T0)
    with pytest.raises(InputError, match="transition 1: transition: expected an object"):
        apply_transitions(s, [["x"]], at=T0)


@given(ts.states())
def test_invariants_hold_after_any_sequence(state: TwinState) -> None:
    ids = [f.id for f in state.facts]
    assert len(ids) == len(set(ids))
    loop_ids = [lp.id for lp in state.open_loops]
    assert len(loop_ids) == len(set(loop_ids))
    assert (state.active_loop is None) == (not state.open_loops)
    assert state.active_loop is None or state.active_loop in loop_ids
    assert len(set(state.commitments)) == len(state.commitments)
    assert load_snapshot(dump_state(state)) == state
