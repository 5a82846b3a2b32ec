"""SQL run on a test database directly, not through ipse (to set up what an older version
wrote, or to break what ipse wrote)."""

from __future__ import annotations

import sqlite3
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
