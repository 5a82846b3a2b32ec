"""Fixtures for the twin tests: a twin store URL over memory, SQLite and PostgreSQL.

PostgreSQL tests read the server URL from ``IPSE_TEST_DATABASE_URL`` and run in a fresh,
randomly named schema that is dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not url:
        pytest.skip("IPSE_TEST_DATABASE_URL is not set: PostgreSQL tests need a real server")
    import psycopg

    schema = "ipse_test_" + secrets.token_hex(6)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def twin_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ipse.db'}"
    return str(request.getfixturevalue("pg_url"))
