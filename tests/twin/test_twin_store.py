"""The twin store on every backend: idempotent snapshots, schema handling, notes, fencing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import twin_strategies as ts

from ipse.errors import InputError, StaleWriter, WriterConflict
from ipse.twin import TwinState, open_store
from ipse.twin._apply import apply_transitions
from ipse.twin._decay import DecayPolicy
from ipse.twin._identity import state_hash
from ipse.twin._state import CURRENT_SCHEMA
from ipse.twin._store import TwinStore, maybe_snapshot

T0 = ts.T0
V1 = {
    "twin_id": "ada",
    "account": "Dana",
    "facts": ["prefers email"],
    "commitments": [],
    "open_loop": None,
    "as_of": "2024-05-01T10:00:00Z",
    "schema": 1,
}


@pytest.fixture
def store(twin_url: str) -> Iterator[TwinStore]:
    with open_store(twin_url) as s:
        yield s


def turn(state: TwinState, *records: Mapping[str, object]) -> TwinState:
    return apply_transitions(state, records, at=T0).state


def test_pleasantries_write_nothing_a_new_constraint_writes_once(store: TwinStore) -> None:
    lease = store.acquire("ada", "w1")
    state = turn(TwinState.new("ada", "Dana", at=T0), {"op": "establish_fact", "text": "VIP"})
    last = maybe_snapshot(store, lease, state, None)
    assert len(store.history("ada")) == 1
    # a turn of pleasantries: nothing identity-relevant happens, or a fact is merely used
    for records in (
        [],
        [{"op": "use_fact", "fact": "VIP"}],
        [{"op": "establish_fact", "text": "VIP"}],
    ):
        state = turn(state, *records)
        assert maybe_snapshot(store, lease, state, last) == last
    assert len(store.history("ada")) == 1
    # a new constraint
    state = turn(state, {"op": "make_commitment", "text": "no upselling"})
    new = maybe_snapshot(store, lease, state, last)
    assert new != last
    assert maybe_snapshot(store, lease, state, new) == new
    history = store.history("ada")
    assert len(history) == 2
    assert history[-1].state_hash == new == state_hash(state)
    assert history[-1].state == state


def test_old_schema_is_read_not_rewritten_next_write_is_current(store: TwinStore) -> None:
    lease = store.acquire("ada", "w1")
    store.backend.append(lease, body=V1, state_hash="sha256:legacy", schema=1)
    first = store.latest("ada")
    assert first is not None
    assert first.state.counterparty.account == "Dana"
    assert first.record.body == V1 and first.schema == 1
    again = store.latest("ada")
    assert again is not None and again.record.body == V1
    state = turn(first.state, {"op": "make_commitment", "text": "be brief"})
    written = store.write(lease, state)
    assert written.schema == CURRENT_SCHEMA
    assert written.record.body["schema"] == CURRENT_SCHEMA
    assert [s.schema for s in store.history("ada")] == [1, CURRENT_SCHEMA]


def test_state_of_another_twin_is_refused(store: TwinStore) -> None:
    lease = store.acquire("ada", "w1")
    with pytest.raises(InputError, match="twin_id"):
        store.write(lease, TwinState.new("bob", at=T0))
    assert store.history("ada") == []


def test_decay_reasons_are_recorded_in_history(store: TwinStore) -> None:
    lease = store.acquire("ada", "w1")
    policy = DecayPolicy(max_facts=1, half_life=86400)
    state = TwinState.new("ada", "Dana", at=T0)
    applied = apply_transitions(
        state, [{"op": "establish_fact", "text": "A"}], at=T0, policy=policy
    )
    last = maybe_snapshot(store, lease, applied.state, None, notes=applied.notes)
    later = T0.replace(day=5)
    applied = apply_transitions(
        applied.state, [{"op": "establish_fact", "text": "B"}], at=later, policy=policy
    )
    maybe_snapshot(store, lease, applied.state, last, notes=applied.notes)
    history = store.history("ada")
    assert [f.text for f in history[0].state.facts] == ["A"]
    assert [f.text for f in history[1].state.facts] == ["B"]
    (note,) = history[1].record.notes
    assert note["text"] == "A" and note["reason"] == "decayed"


def test_lease_context_and_fencing(store: TwinStore) -> None:
    with store.lease("ada", "w1") as lease, pytest.raises(WriterConflict):
        store.acquire("ada", "w2")
    taken = store.acquire("ada", "w2")
    with pytest.raises(StaleWriter):
        store.write(lease, TwinState.new("ada", at=T0))
    store.write(taken, TwinState.new("ada", at=T0))
    assert [s.record.writer for s in store.history("ada")] == ["w2"]
    assert store.twins() == ["ada"]


def test_default_store_lives_in_ipse_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IPSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IPSE_DATABASE_URL", raising=False)
    with open_store() as store:
        assert store.url == f"sqlite:///{tmp_path / 'home' / 'ipse.db'}"
    assert (tmp_path / "home" / "ipse.db").exists()


@pytest.mark.parametrize("cache", [True, False])
def test_a_second_reader_sees_every_new_version(tmp_path: Path, cache: bool) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with open_store(url) as writer, open_store(url, cache=cache) as reader:
        lease = writer.acquire("ada", "w1")
        state = TwinState.new("ada", "Dana", at=T0)
        for text in ("a", "b", "c"):
            state = turn(state, {"op": "make_commitment", "text": text})
            writer.write(lease, state)
            seen = reader.latest("ada")
            assert seen is not None and seen.state == state
            assert reader.latest("ada") == seen
        assert [s.version for s in reader.history("ada")] == [1, 2, 3]


def test_sqlite_urls_follow_the_usual_slash_convention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three slashes: relative to the current folder; four: absolute."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "abs").mkdir()
    with open_store("sqlite:///twins.db") as store:
        store.twins()
    assert (tmp_path / "twins.db").exists()
    with open_store(f"sqlite:///{tmp_path / 'abs' / 'other.db'}") as store:
        assert store.url == f"sqlite:////{str(tmp_path).lstrip('/')}/abs/other.db"
    assert (tmp_path / "abs" / "other.db").exists()


def test_a_snapshot_written_by_a_turn_and_read_back_has_the_same_identity(
    store: TwinStore,
) -> None:
    from ipse.twin import apply_turn
    from ipse.twin._identity import identity_view

    apply_turn(store, "ada", [{"op": "set_counterparty", "account": "Dana"}])
    turn = apply_turn(store, "ada", [{"op": "establish_fact", "text": "prefers email"}])
    assert turn.written is not None and turn.previous is not None
    assert turn.written.identity == identity_view(turn.state)
    assert turn.written.identity["facts"] == ["prefers email"]
    read = store.history("ada")[-1]  # decoded from the stored body
    assert read.version == turn.written.version and read.identity == turn.written.identity
