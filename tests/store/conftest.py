"""Fixtures for the store tests: one backend fixture over memory, SQLite and PostgreSQL.

PostgreSQL tests read the server URL from ``IPSE_TEST_DATABASE_URL`` and isolate themselves in a
fresh, randomly named schema (through libpq's ``options=-csearch_path=...``), dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipse.store import SnapshotBackend, open_backend


def pg_base_url() -> str:
    url = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not url:
        pytest.skip("IPSE_TEST_DATABASE_URL is not set: PostgreSQL tests need a real server")
    return url


def with_search_path(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    import psycopg

    base = pg_base_url()
    schema = "ipse_test_" + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ipse.db'}"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def backend(store_url: str) -> Iterator[SnapshotBackend]:
    b = open_backend(store_url)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def durable_url(request: pytest.FixtureRequest) -> str:
    """Parametrised indirectly by tests that need a store shared across processes."""
    kind = getattr(request, "param", "sqlite")
    if kind == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))
