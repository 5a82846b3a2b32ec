"""The PostgreSQL backend's connections: their session settings and prepared lease statements.

A durable write travels without a ``SET`` before it, so the settings it relies on (commit
waits for the WAL flush, lock waits and statements bounded) are its connections' own, set when
each is made, whatever the URL or the server's defaults say."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ipse.errors import StoreError
from ipse.store import open_backend
from ipse.store._postgres import _APPEND_AFTER, _DIRECT, PostgresBackend


def _turned_off(pg_url: str) -> str:
    """``pg_url`` with ``synchronous_commit=off`` and no lock wait bound as its own options."""
    assert "options=-csearch_path%3D" in pg_url
    return pg_url.replace(
        "options=-csearch_path%3D",
        "options=-csynchronous_commit%3Doff%20-clock_timeout%3D0%20-csearch_path%3D",
    )


@pytest.fixture
def backend(pg_url: str) -> Iterator[PostgresBackend]:
    b = open_backend(_turned_off(pg_url))
    assert isinstance(b, PostgresBackend)
    try:
        yield b
    finally:
        b.close()


def _setting(backend: PostgresBackend, name: str) -> str:
    return str(backend._db.rows(f"SHOW {name}")[0][0])


def test_writes_commit_durably_whatever_the_url_says(backend: PostgresBackend) -> None:
    assert _setting(backend, "synchronous_commit") == "on"
    assert _setting(backend, "lock_timeout") == "30s"
    assert _setting(backend, "statement_timeout") == "65s"


def test_other_users_of_the_url_keep_its_settings(pg_url: str, backend: PostgresBackend) -> None:
    from ipse.store._connections import PostgresConnection

    other = PostgresConnection(_turned_off(pg_url))
    try:
        assert str(other.rows("SHOW synchronous_commit")[0][0]) == "off"
    finally:
        other.close()


def _append(backend: PostgresBackend, after: int, schema: int = 1) -> int:
    record = backend.append_after(
        "ada", "me", after=after, body={"n": after}, state_hash=f"h{after}", schema=schema
    )
    assert record is not None
    return record.version


def test_a_connection_that_lost_the_statement_prepares_it_again(backend: PostgresBackend) -> None:
    assert _append(backend, 0) == 1
    name = _DIRECT[_APPEND_AFTER].name.decode()
    with backend._db.connection() as conn:  # the pool's one idle connection, lent again next
        conn.execute(f"DEALLOCATE {name}")
    assert _append(backend, 1) == 2
    assert [r.version for r in backend.history("ada")] == [1, 2]


def test_an_error_of_the_server_is_a_store_error(backend: PostgresBackend) -> None:
    with pytest.raises(StoreError, match="out of range"):
        _append(backend, 0, schema=2**40)
    assert backend.history("ada") == []
    assert _append(backend, 0) == 1
