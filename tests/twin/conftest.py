"""Fixtures for the twin tests: a twin store URL over memory, SQLite and PostgreSQL.

PostgreSQL tests read the server URL from ``IPSE_TEST_DATABASE_URL`` and run in a fresh,
randomly named schema that is dropped afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def twin_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ipse.db'}"
    return str(request.getfixturevalue("pg_url"))
