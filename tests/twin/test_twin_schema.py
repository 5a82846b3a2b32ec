"""Schema versions 1, 2, 3: explicit migrations, strict validation, export, no rewriting."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import twin_strategies as ts
from hypothesis import given

from ipse.errors import InputError
from ipse.twin._schema import (
    FACT_FIELDS,
    LOOP_FIELDS,
    V1_FIELDS,
    V2_COUNTERPARTY_FIELDS,
    V2_FIELDS,
    V3_COUNTERPARTY_FIELDS,
    V3_FIELDS,
    dump_state,
    export_state,
    load_snapshot,
    migrate_1_to_2,
    migrate_2_to_3,
)

V1: dict[str, Any] = {
    "twin_id": "ada",
    "account": "Dana Reyes",
    "facts": ["prefers email", "VIP since 2019"],
    "commitments": ["keep it brief"],
    "open_loop": "confirm refund 2231",
    "as_of": "2024-05-01T10:00:00Z",
    "schema": 1,
}
V2: dict[str, Any] = {
    "twin_id": "ada",
    "counterparty": {
        "account": "Dana Reyes",
        "established_facts": ["prefers email", "VIP since 2019"],
    },
    "commitments": ["keep it brief"],
    "open_loop": "confirm refund 2231",
    "as_of": "2024-05-01T10:00:00Z",
    "schema": 2,
}


def test_v1_to_v2_is_the_v2_shape() -> None:
    assert migrate_1_to_2(V1) == V2


def test_v2_to_v3() -> None:
    v3 = migrate_2_to_3(V2)
    assert v3["schema"] == 3
    assert [f["text"] for f in v3["counterparty"]["facts"]] == ["prefers email", "VIP since 2019"]
    fact = v3["counterparty"]["facts"][0]
    assert fact["established_at"] == fact["last_used_at"] == "2024-05-01T10:00:00Z"
    assert fact["pinned"] is False and fact["expires_at"] is None and fact["superseded_by"] is None
    assert [lp["text"] for lp in v3["open_loops"]] == ["confirm refund 2231"]
    assert v3["active_loop"] == v3["open_loops"][0]["id"]


def test_all_versions_load_to_the_same_state() -> None:
    from_v1 = load_snapshot(V1)
    from_v2 = load_snapshot(V2)
    from_v3 = load_snapshot(migrate_2_to_3(V2))
    assert from_v1 == from_v2 == from_v3
    assert from_v1.counterparty.account == "Dana Reyes"
    assert [f.text for f in from_v1.facts] == ["prefers email", "VIP since 2019"]


def test_loading_never_changes_the_document() -> None:
    for doc in (V1, V2):
        before = copy.deepcopy(doc)
        load_snapshot(doc)
        assert doc == before


def test_no_open_loop_migrates_to_no_loops() -> None:
    state = load_snapshot({**V1, "open_loop": None})
    assert state.open_loops == () and state.active_loop is None


def test_export_v2_of_migrated_v2_round_trips() -> None:
    assert export_state(load_snapshot(V2), 2) == V2


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({**V2, "schema": 9}, "schema: unknown schema version 9"),
        ({k: v for k, v in V2.items() if k != "schema"}, "schema: missing"),
        ({**V2, "schema": "2"}, "schema: expected an integer"),
        ({**V2, "schema": True}, "schema: expected an integer"),
        ({k: v for k, v in V2.items() if k != "as_of"}, "as_of: missing"),
        ({**V2, "as_of": "yesterday"}, "as_of: not an ISO-8601"),
        ({**V2, "commitments": "be brief"}, "commitments: expected a list"),
        ({**V2, "commitments": ["ok", 3]}, r"commitments\[1\]: expected a string"),
        ({**V2, "counterparty": {"account": "x"}}, "counterparty.established_facts: missing"),
        ({**V2, "counterparty": {"account": 5, "established_facts": []}}, "counterparty.account"),
        ({**V2, "open_loop": 7}, "open_loop: expected a string or null"),
        ({**V2, "extra": 1}, "extra: unknown field"),
        ({**V1, "facts": None}, "facts: expected a list"),
        ({**V1, "account": None}, "account: expected a string"),
        ([], "snapshot: expected an object"),
    ],
)
def test_bad_documents_name_the_field(doc: Any, field: str) -> None:
    with pytest.raises(InputError, match=field):
        load_snapshot(doc)


def test_v3_checks_loop_and_fact_references() -> None:
    v3 = migrate_2_to_3(V2)
    with pytest.raises(InputError, match="active_loop: unknown loop"):
        load_snapshot({**v3, "active_loop": "l-nope"})
    facts = v3["counterparty"]["facts"]
    dup = {**v3, "counterparty": {"account": "x", "facts": [facts[0], facts[0]]}}
    with pytest.raises(InputError, match=r"facts\[1\].id: duplicate"):
        load_snapshot(dup)
    bad = {**v3, "counterparty": {"account": "x", "facts": [{**facts[0], "pinned": "yes"}]}}
    with pytest.raises(InputError, match=r"counterparty.facts\[0\].pinned"):
        load_snapshot(bad)


@given(ts.states())
def test_dump_load_round_trip(state: Any) -> None:
    doc = dump_state(state)
    assert doc["schema"] == 3
    assert load_snapshot(doc) == state
    assert dump_state(load_snapshot(doc)) == doc


@given(ts.states())
def test_export_v2_is_valid_v2_and_keeps_live_facts(state: Any) -> None:
    v2 = export_state(state, 2)
    again = load_snapshot(v2)
    assert [f.text for f in again.live_facts()] == list(
        dict.fromkeys(f.text for f in state.live_facts())
    )
    assert again.commitments == state.commitments
    active = state.loop(state.active_loop) if state.active_loop else None
    assert v2["open_loop"] == (active.text if active else None)


def test_export_unknown_schema() -> None:
    with pytest.raises(InputError, match="schema"):
        export_state(load_snapshot(V2), 1)


def test_the_writers_use_the_declared_fields() -> None:
    state = load_snapshot(V1)
    assert state.facts and state.open_loops
    v3 = dump_state(state)
    assert set(v3) == V3_FIELDS
    assert set(v3["counterparty"]) == V3_COUNTERPARTY_FIELDS
    assert all(set(f) == FACT_FIELDS for f in v3["counterparty"]["facts"])
    assert all(set(lp) == LOOP_FIELDS for lp in v3["open_loops"])
    v2 = export_state(state, 2)
    assert set(v2) == V2_FIELDS and set(v2["counterparty"]) == V2_COUNTERPARTY_FIELDS
    assert set(migrate_1_to_2(copy.deepcopy(V1))) == V2_FIELDS
    assert set(V1) == V1_FIELDS
