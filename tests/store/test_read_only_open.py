"""Commands that only read never create a store: a typo in ``--store``, an ``IPSE_HOME`` that
points at nothing, an empty file or a PostgreSQL database without ipse's tables is one line and
exit 2, and nothing (folder, file, table) is left behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import run_cli

READERS = (
    ("archive", "list"),
    ("archive", "list", "some-session"),
    ("recall", "toolu_01"),
    ("twin", "show", "ada"),
    ("twin", "history", "ada"),
    ("twin", "export", "ada"),
)


def _refused(args: tuple[str, ...], *, env: dict[str, str | None] | None = None) -> str:
    result = run_cli(*args, env=env)
    assert result.returncode == 2, (args, result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("ipse: error:"), args
    return result.stderr


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_missing_sqlite_store_is_named_and_not_created(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    url = f"sqlite:///{tmp_path}/typo/x.db"
    line = _refused((*args, "--store", url))
    assert f"{tmp_path}/typo/x.db: no such database" in line
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_an_ipse_home_that_points_at_nothing_stays_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    home = tmp_path / "no-such-home"
    line = _refused(args, env={"IPSE_HOME": str(home), "IPSE_DATABASE_URL": None})
    assert "no such database" in line and str(home) in line
    assert not home.exists()


def test_an_empty_file_is_not_filled_with_tables(tmp_path: Path) -> None:
    empty = tmp_path / "x.db"
    empty.write_bytes(b"")
    for args in READERS:
        assert "holds no ipse data" in _refused((*args, "--store", f"sqlite:///{empty}"))
    assert empty.read_bytes() == b""


def test_rehydrate_without_a_store_is_a_cold_start_that_says_so(tmp_path: Path) -> None:
    config = tmp_path / "twin.toml"
    config.write_text('role = "You are Ada."\n')
    url = f"sqlite:///{tmp_path}/typo/x.db"
    result = run_cli("twin", "rehydrate", "ada", "--config", str(config), "--store", url, "--json")
    assert result.returncode == 0, result.stderr
    assert '"cold":true' in result.stdout.replace(" ", "")
    warning = r"ipse: warning: .*typo/x\.db: no such database.*cold start\n"
    assert re.fullmatch(warning, result.stderr)
    assert not (tmp_path / "typo").exists()


def test_readers_work_once_a_writer_made_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/made/x.db"
    assert run_cli("twin", "init", "ada", "--store", url).returncode == 0
    assert run_cli("twin", "show", "ada", "--store", url).returncode == 0
    assert run_cli("archive", "list", "--store", url, "--json").returncode == 0


def test_postgres_without_ipse_tables_is_refused_and_left_empty(pg_url: str) -> None:
    import psycopg

    for args in READERS:
        assert "no ipse data in that database" in _refused((*args, "--store", pg_url))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchone()
    assert schema is not None and schema[0].startswith("ipse_test_")
    assert tables == (0,)
    assert run_cli("twin", "init", "ada", "--store", pg_url).returncode == 0
    assert run_cli("twin", "show", "ada", "--store", pg_url).returncode == 0
