"""Rehydration: role first from configuration, fixed order, active loop last, same bytes."""

from __future__ import annotations

from datetime import timedelta

import pytest
import twin_strategies as ts
from hypothesis import given

from ipse.errors import InputError
from ipse.twin import TwinConfig, TwinState, open_store, rehydrate
from ipse.twin._apply import apply_transitions
from ipse.twin._rehydrate import rehydrate_state

T0 = ts.T0
CONFIG = TwinConfig(role="You are Ada, Acme's support twin.")
TURN = [
    {"op": "establish_fact", "text": "prefers email"},
    {"op": "make_commitment", "text": "keep replies short"},
    {"op": "open_loop", "text": "confirm refund 2231"},
    {"op": "open_loop", "text": "send plan comparison"},
    {"op": "set_active_loop", "loop": "confirm refund 2231"},
    {"op": "establish_fact", "text": "on holiday", "expires_at": "2025-01-02T00:00:00Z"},
]


def state() -> TwinState:
    return apply_transitions(TwinState.new("ada", "Dana Reyes", at=T0), TURN, at=T0).state


def test_order_role_facts_commitments_loops_active_last() -> None:
    text = rehydrate_state(state(), CONFIG, twin_id="ada", at=T0).text()
    assert text.startswith(CONFIG.role + "\n\n")
    order = [
        "Dana Reyes",
        "prefers email",
        "keep replies short",
        "send plan comparison",
        "ACTIVE: confirm refund 2231",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.rstrip().endswith("ACTIVE: confirm refund 2231")
    assert "do not greet" in text and "do not introduce yourself again" in text
    assert "do not ask again" in text


def test_expired_facts_are_not_shown() -> None:
    assert "on holiday" in rehydrate_state(state(), CONFIG, twin_id="ada", at=T0).text()
    later = rehydrate_state(state(), CONFIG, twin_id="ada", at=T0 + timedelta(days=2)).text()
    assert "on holiday" not in later


def test_provider_shapes() -> None:
    r = rehydrate_state(state(), CONFIG, twin_id="ada", at=T0)
    system = r.anthropic()["system"]
    assert system[0] == {"type": "text", "text": CONFIG.role}
    assert system[1]["text"] == r.context
    assert system[1]["cache_control"] == {"type": "ephemeral"}
    messages = r.openai()["messages"]
    assert messages == [
        {"role": "system", "content": CONFIG.role},
        {"role": "system", "content": r.context},
    ]
    with pytest.raises(InputError, match="format"):
        r.render("xml")


def test_cold_start_is_the_clean_role(tmp_path: object) -> None:
    with open_store("memory://") as store:
        r = rehydrate(store, "nobody", CONFIG)
    assert r.cold and r.version is None
    assert r.anthropic() == {
        "system": [{"type": "text", "text": CONFIG.role, "cache_control": {"type": "ephemeral"}}]
    }
    assert r.text() == CONFIG.role + "\n"


def test_role_comes_from_config_never_the_snapshot(tmp_path: object) -> None:
    with open_store("memory://") as store:
        lease = store.acquire("ada", "w")
        store.write(lease, state())
        a = rehydrate(store, "ada", CONFIG, at=T0)
        b = rehydrate(store, "ada", TwinConfig(role="You are Bo."), at=T0)
    assert a.context == b.context
    assert a.text().startswith(CONFIG.role) and b.text().startswith("You are Bo.")


def test_bytes_are_deterministic_across_stores(tmp_path: object) -> None:
    from pathlib import Path

    outputs = set()
    for url in ("memory://", f"sqlite:///{Path(str(tmp_path)) / 'a.db'}"):
        with open_store(url) as store:
            lease = store.acquire("ada", "w")
            store.write(lease, state())
            for fmt in ("anthropic", "openai", "text"):
                outputs.add((fmt, rehydrate(store, "ada", CONFIG, at=T0).to_bytes(fmt)))
    assert len(outputs) == 3


@given(ts.states())
def test_rehydration_is_a_pure_function(s: TwinState) -> None:
    a = rehydrate_state(s, CONFIG, twin_id=s.twin_id, at=s.as_of)
    b = rehydrate_state(s, CONFIG, twin_id=s.twin_id, at=s.as_of)
    assert a.to_bytes("anthropic") == b.to_bytes("anthropic")
    text = a.text()
    assert text.startswith(CONFIG.role)
    for fact in s.live_facts():
        assert f"- {fact.text}\n" in text
    if s.active_loop:
        active = s.loop(s.active_loop)
        assert active is not None
        assert text.endswith(f"- ACTIVE: {active.text}\n")
