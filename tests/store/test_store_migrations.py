"""Migrations: from an empty database, from the first schema, idempotent, and refusing a
database that belongs to another version; another component can register its own steps."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.sql import raw_exec

from ipse.errors import StoreError
from ipse.store import MigrationStep, open_backend, register
from ipse.store._migrations import _REGISTRY, registered
from ipse.store._tables import STEPS

TWIN_STEPS = [("twin", s.number, s.name) for s in STEPS]


def twin_steps(backend: Any) -> list[tuple[str, int, str]]:
    """The applied steps of the twin component (other components may share the database)."""
    return [m for m in backend.applied_migrations() if m[0] == "twin"]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


def test_from_empty_applies_every_step_once(url: str) -> None:
    b = open_backend(url)
    assert twin_steps(b) == TWIN_STEPS
    assert b.migrate() == []  # type: ignore[attr-defined]
    b.close()
    again = open_backend(url)
    assert twin_steps(again) == TWIN_STEPS
    again.close()


def test_from_first_schema_keeps_data(url: str) -> None:
    old = open_backend(url, upto={"twin": 1})
    assert twin_steps(old) == TWIN_STEPS[:1]
    lease = old.acquire("t1", "alice", 30)
    old.close()
    body = '{"schema": 1, "twin_id": "t1"}'
    now = "0" if url.startswith("sqlite:") else "now()"
    raw_exec(
        url,
        "INSERT INTO twin_snapshots (twin_id, version, state_hash, schema, body, created_at,"
        f" writer, token) VALUES ('t1', 1, 'sha256:x', 1, ?, {now}, 'alice', 1)",
        (body,),
    )
    new = open_backend(url)
    assert twin_steps(new) == TWIN_STEPS
    history = new.history("t1")
    assert len(history) == 1
    assert history[0].body == {"schema": 1, "twin_id": "t1"}
    assert history[0].notes == ()
    assert history[0].schema == 1
    # the lease taken under the first schema still fences
    new.append(lease, body={"schema": 3}, state_hash="sha256:y", schema=3, notes=[{"a": 1}])
    assert [r.version for r in new.history("t1")] == [1, 2]
    new.close()


def test_renamed_step_is_refused(url: str) -> None:
    open_backend(url).close()
    raw_exec(url, "UPDATE ipse_migrations SET name = 'something else' WHERE step = 2")
    with pytest.raises(StoreError, match="another version"):
        open_backend(url)


def test_newer_database_is_refused(url: str) -> None:
    open_backend(url).close()
    raw_exec(
        url,
        "INSERT INTO ipse_migrations (component, step, name, applied_at)"
        " VALUES ('twin', 99, 'from the future', "
        + ("0)" if url.startswith("sqlite:") else "now())"),
    )
    with pytest.raises(StoreError, match="upgrade ipse"):
        open_backend(url)


@pytest.fixture
def extra_component() -> Iterator[str]:
    name = "archive_test"
    steps = [
        MigrationStep(
            1,
            "archive blocks",
            ("CREATE TABLE archive_test_blocks (id INTEGER PRIMARY KEY, body TEXT)",),
            ("CREATE TABLE archive_test_blocks (id BIGINT PRIMARY KEY, body TEXT)",),
        )
    ]
    register(name, steps)
    try:
        yield name
    finally:
        _REGISTRY.pop(name, None)


def test_another_component_registers_its_own_steps(url: str, extra_component: str) -> None:
    assert extra_component in registered()
    b = open_backend(url)
    applied = b.applied_migrations()  # type: ignore[attr-defined]
    assert ("archive_test", 1, "archive blocks") in applied
    assert all(step in applied for step in TWIN_STEPS)
    b.close()
    raw_exec(url, "INSERT INTO archive_test_blocks (id, body) VALUES (1, 'x')")


def test_register_rejects_bad_numbering() -> None:
    with pytest.raises(ValueError, match="numbered"):
        register("bad_component", [MigrationStep(2, "x", (), ())])
    assert "bad_component" not in _REGISTRY


def test_bad_urls() -> None:
    from ipse.errors import InputError

    with pytest.raises(InputError, match="unknown scheme"):
        open_backend("mysql://x")
    with pytest.raises(InputError, match="no database path"):
        open_backend("sqlite:///")


def test_unreachable_postgres_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot connect to postgresql://u:\*\*\*@"):
        open_backend("postgresql://u:secret@127.0.0.1:1/nothing?connect_timeout=2")


def test_missing_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from ipse.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingExtra, match=r"ipse\[postgres\]"):
        open_backend("postgresql://127.0.0.1/x")


def _schema(url: str) -> list[tuple[Any, ...]]:
    """The database's schema as comparable rows: tables, columns, indexes, constraints."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url[len("sqlite://") :])
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
        conn.close()
        return [
            (kind, name, table, " ".join((sql or "").split())) for kind, name, table, sql in rows
        ]
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        schema = pg.execute("SELECT current_schema()").fetchone()
        assert schema is not None
        columns = pg.execute(
            "SELECT table_name, column_name, ordinal_position, data_type, is_nullable,"
            " column_default FROM information_schema.columns"
            " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ).fetchall()
        indexes = pg.execute(
            "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE schemaname = current_schema() ORDER BY indexname"
        ).fetchall()
        constraints = pg.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)"
            " FROM pg_constraint WHERE connamespace = current_schema()::regnamespace"
            " ORDER BY 1, 2"
        ).fetchall()
    rows = [*columns, *indexes, *constraints]
    return [tuple(str(v).replace(f"{schema[0]}.", "") for v in row) for row in rows]


def _flat(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _applied(url: str) -> list[tuple[str, int, str]]:
    b = open_backend(url)
    try:
        return list(b.applied_migrations())  # type: ignore[attr-defined]
    finally:
        b.close()


@pytest.fixture
def second_url(url: str, tmp_path: Path) -> Iterator[str]:
    """Another empty database of the same kind as ``url``."""
    if url.startswith("sqlite:"):
        yield f"sqlite:///{tmp_path / 'stepwise.db'}"
        return

    from tests.conftest import pg_base_url
    from tests.support.sql import scratch_schema

    with scratch_schema(pg_base_url()) as (url, _):
        yield url


def test_a_fresh_schema_equals_one_migrated_step_by_step(url: str, second_url: str) -> None:
    from ipse.archive._schema import ensure_registered
    from ipse.store._tables import ensure_registered as ensure_snapshot_tables

    ensure_registered()
    ensure_snapshot_tables()
    components = registered()
    assert set(components) >= {"twin", "archive"}
    open_backend(url).close()  # every step at once
    longest = max(len(steps) for steps in components.values())
    for upto in range(1, longest + 1):  # one step at a time, reopening in between
        open_backend(second_url, upto=dict.fromkeys(components, upto)).close()
    assert _schema(second_url) == _schema(url)
    assert _schema(url)  # the comparison saw tables
    assert _applied(second_url) == _applied(url)
