"""PostgreSQL connections come from one pool per process and URL, with a size limit.

Connections are counted by the server (``pg_stat_activity``) under an application name unique
to the test, so other users of the database do not disturb the count.
"""

from __future__ import annotations

import secrets
import threading
import time

import psycopg
import pytest

from ipse.errors import InputError
from ipse.store import open_backend
from ipse.store._connections import DEFAULT_POOL_SIZE, pool_settings
from ipse.twin import open_store


def _named(url: str, extra: str = "") -> tuple[str, str]:
    app = "ipse_pool_" + secrets.token_hex(4)
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}application_name={app}{extra}", app


def _connections(url: str, app: str) -> int:
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _settled(url: str, app: str) -> int:
    """The count once closed connections' server processes have gone (they exit just after
    the client closes), polled for at most a few seconds."""
    count = _connections(url, app)
    for _ in range(50):
        if count == 0:
            break
        time.sleep(0.1)
        count = _connections(url, app)
    return count


def test_pool_size_comes_from_the_url_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("IPSE_PG_POOL_SIZE", raising=False)
    url = "postgresql://u@h/db?options=-csearch_path%3Ds"
    assert pool_settings(url) == (url, DEFAULT_POOL_SIZE)
    assert pool_settings(url + "&pool_size=3") == (url, 3)
    monkeypatch.setenv("IPSE_PG_POOL_SIZE", "5")
    assert pool_settings(url) == (url, 5)
    assert pool_settings(url + "&pool_size=2")[1] == 2
    for bad in ("0", "-1", "many"):
        with pytest.raises(InputError, match="pool_size"):
            pool_settings(f"{url}&pool_size={bad}")
    monkeypatch.setenv("IPSE_PG_POOL_SIZE", "x")
    with pytest.raises(InputError, match="IPSE_PG_POOL_SIZE"):
        pool_settings(url)


def test_threads_share_at_most_pool_size_connections(pg_url: str) -> None:
    url, app = _named(pg_url, "&pool_size=2")
    with open_store(url) as store:
        lease = store.acquire("t", "me", ttl=60)
        store.release(lease)
    peak = 0
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            backend = open_backend(url)
            try:
                for _ in range(15):
                    backend.latest("t")
                    backend.latest_version("t")
            finally:
                backend.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    keep = open_backend(url)  # holds the pool open while threads come and go
    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, _connections(pg_url, app))
    for t in threads:
        t.join()
    assert not errors
    assert 1 <= peak <= 2
    assert _connections(pg_url, app) <= 2
    keep.close()
    assert _settled(pg_url, app) == 0  # the pool closed with its last user


def test_reopening_a_store_reuses_the_pooled_connection(pg_url: str) -> None:
    url, app = _named(pg_url)
    keep = open_backend(url)
    for _ in range(10):
        with open_store(url) as store:
            store.latest("t")
    assert _connections(pg_url, app) == 1
    keep.close()
