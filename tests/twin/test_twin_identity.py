"""The identity hash: identity fields only, canonical, per-twin policy."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
import twin_strategies as ts
from hypothesis import given
from hypothesis import strategies as st

from ipse.errors import InputError
from ipse.twin import TwinState
from ipse.twin._identity import (
    IDENTITY_FIELDS,
    IdentityPolicy,
    identity_view,
    state_hash,
    view_hash,
)
from ipse.twin._transitions import establish_fact, make_commitment, open_loop, use_fact

T0 = ts.T0


def base() -> TwinState:
    s = TwinState.new("ada", "Dana", at=T0)
    s = establish_fact(s, "prefers email", at=T0)
    s = make_commitment(s, "be brief", at=T0)
    return open_loop(s, "refund 2231", at=T0)


def test_hash_shape_and_stability() -> None:
    h = state_hash(base())
    assert h.startswith("sha256:") and len(h) == 7 + 64
    assert state_hash(base()) == h


@given(ts.states(), st.integers(1, 10**6))
def test_timestamps_never_count(state: TwinState, seconds: int) -> None:
    later = state.as_of + timedelta(seconds=seconds)
    moved = replace(state, as_of=later).with_facts(
        tuple(
            replace(f, last_used_at=f.last_used_at + timedelta(seconds=seconds))
            for f in state.facts
        )
    )
    # expiry is judged at as_of; keep expiring facts out of the comparison
    if any(f.expires_at is not None for f in state.facts):
        return
    assert state_hash(moved) == state_hash(state)


def test_using_a_fact_does_not_change_identity() -> None:
    s = base()
    assert state_hash(use_fact(s, "prefers email", at=T0 + timedelta(days=3))) == state_hash(s)


def test_identity_changes() -> None:
    s = base()
    h = state_hash(s)
    assert state_hash(make_commitment(s, "no upsell", at=T0)) != h
    assert state_hash(establish_fact(s, "has two kids", at=T0)) != h
    assert state_hash(open_loop(s, "send comparison", at=T0)) != h
    assert state_hash(replace(s, counterparty=replace(s.counterparty, account="Eve"))) != h


def test_policy_chooses_the_fields() -> None:
    scheduling = IdentityPolicy(("counterparty", "open_loops", "active_loop"))
    s = base()
    assert state_hash(make_commitment(s, "no upsell", at=T0), scheduling) == state_hash(
        s, scheduling
    )
    assert state_hash(open_loop(s, "book Tuesday", at=T0), scheduling) != state_hash(s, scheduling)
    assert state_hash(s, scheduling) != state_hash(s)


def test_policy_is_order_insensitive() -> None:
    a = IdentityPolicy(("facts", "counterparty"))
    b = IdentityPolicy(("counterparty", "facts"))
    assert a == b and state_hash(base(), a) == state_hash(base(), b)


@pytest.mark.parametrize("fields", [("tone",), ()])
def test_bad_policy(fields: tuple[str, ...]) -> None:
    with pytest.raises(InputError, match=r"identity\.fields"):
        IdentityPolicy(fields)


@given(ts.states(), st.sets(st.sampled_from(IDENTITY_FIELDS), min_size=1))
def test_a_hash_from_the_full_view_is_the_hash_under_the_policy(
    state: TwinState, fields: set[str]
) -> None:
    policy = IdentityPolicy(tuple(fields))
    assert view_hash(identity_view(state), policy) == state_hash(state, policy)
    assert view_hash(identity_view(state)) == state_hash(state)
