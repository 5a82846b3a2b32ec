"""Shared test fixtures: where the real agent sessions live, an isolated IPSE_HOME, and a
PostgreSQL URL isolated in a fresh schema."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
CLAUDE_CODE = SHARED_DATA / "claude-code"
BIG_SESSION = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
OPENAI_TRAJ = SHARED_DATA / "openai-chat" / "deepseek-chat__django__django-13265.traj.json"
HTTP_LOG = SHARED_DATA / "anthropic-http" / "captured-2"


@pytest.fixture()
def shared_data() -> Path:
    """The folder of real sessions (read-only)."""
    assert SHARED_DATA.is_dir(), f"the shared data folder is missing: {SHARED_DATA}"
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own IPSE_HOME, so nothing touches the user's data."""
    home = tmp_path_factory.mktemp("ipse-home")
    monkeypatch.setenv("IPSE_HOME", str(home))
    return home


def pg_base_url() -> str:
    """The test server (``IPSE_TEST_DATABASE_URL``); the test is skipped, saying why, without it."""
    url = os.environ.get("IPSE_TEST_DATABASE_URL")
    if not url:
        pytest.skip("IPSE_TEST_DATABASE_URL is not set: PostgreSQL tests need a real server")
    return url


def with_search_path(url: str, schema: str) -> str:
    """The URL with libpq's ``options=-csearch_path=SCHEMA``."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose tables land in a fresh, randomly named schema, dropped afterwards."""
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
