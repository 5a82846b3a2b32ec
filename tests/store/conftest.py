"""Fixtures for the store tests: one backend fixture over memory, SQLite and PostgreSQL.

PostgreSQL tests read the server URL from ``IPSE_TEST_DATABASE_URL`` and isolate themselves in a
fresh, randomly named schema (through libpq's ``options=-csearch_path=...``), dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ipse.store import SnapshotBackend, open_backend


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
