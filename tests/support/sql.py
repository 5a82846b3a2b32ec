"""SQL run on a test database directly, not through ipse (to set up what an older version
wrote, or to break what ipse wrote)."""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Iterator
from typing import Any


def raw_exec(url: str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on the database at ``url`` (``sqlite:///PATH`` or PostgreSQL), with
    ``?`` placeholders, committed."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url[len("sqlite://") :])
        with conn:
            conn.execute(sql, params)
        conn.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(sql.replace("?", "%s"), params)


def with_search_path(url: str, schema: str) -> str:
    """The URL with libpq's ``options=-csearch_path=SCHEMA``."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


@contextlib.contextmanager
def scratch_schema(base: str, prefix: str = "ipse_test_") -> Iterator[tuple[str, str]]:
    """A new, randomly named schema on the PostgreSQL server at ``base``, dropped (with all it
    holds) at the end: (a URL whose tables land in it, its name)."""
    import psycopg

    schema = prefix + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(base, schema), schema
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
