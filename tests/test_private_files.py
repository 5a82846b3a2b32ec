"""What ipse keeps for itself is private: the home folder 0700, databases (with their -wal and
-shm) 0600, created so under any umask and tightened when found wider."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ipse.fileio import private_dir, private_file, tighten


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _ipse(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "IPSE_HOME": str(home)},
        umask=0,  # the most permissive umask: modes must not depend on it
        check=False,
    )


def _database_files(home: Path) -> list[Path]:
    return [p for p in home.iterdir() if p.name.startswith("ipse.db")]


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tool_heavy.jsonl"


@pytest.mark.parametrize(
    "command",
    [["twin", "init", "x"], ["handoff", str(EXAMPLE), "--at", "end", "-o", "OUT"]],
    ids=["twin", "archive"],
)
def test_a_new_home_and_database_are_private(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    command = [str(tmp_path / "out.json") if word == "OUT" else word for word in command]
    done = _ipse(*command, home=home)
    assert done.returncode == 0, done.stderr
    assert _mode(home) == 0o700
    files = _database_files(home)
    assert home / "ipse.db" in files
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_an_existing_home_and_database_are_tightened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    db = home / "ipse.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()  # -wal and -shm stay while the connection is open
    for path in _database_files(home):
        path.chmod(0o644)
    try:
        done = _ipse("twin", "init", "x", home=home)
        assert done.returncode == 0, done.stderr
        files = _database_files(home)
        assert {p.name for p in files} == {"ipse.db", "ipse.db-wal", "ipse.db-shm"}
        assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
    finally:
        conn.close()
    assert _mode(home) == 0o700


def test_a_store_file_in_a_new_folder_gets_a_private_folder(tmp_path: Path) -> None:
    target = tmp_path / "new" / "twins.db"
    done = _ipse("twin", "init", "x", "--store", f"sqlite:///{target}", home=tmp_path / "h")
    assert done.returncode == 0, done.stderr
    assert _mode(target.parent) == 0o700 and _mode(target) == 0o600


def test_private_file_creates_0600_and_appends(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "records" / "proxy.log"
        with private_file(path) as handle:
            handle.write(b"one\n")
        with private_file(path) as handle:
            handle.write(b"two\n")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"one\ntwo\n"
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700


def test_private_file_tightens_and_truncates_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "ipse.pid"
    path.write_bytes(b"12345\n")
    path.chmod(0o644)
    with private_file(path, append=False) as handle:
        handle.write(b"7\n")
    assert path.read_bytes() == b"7\n" and _mode(path) == 0o600


def test_tighten_keeps_the_owner_bits_and_ignores_missing_paths(tmp_path: Path) -> None:
    script = tmp_path / "run"
    script.write_text("")
    script.chmod(0o755)
    tighten(script)
    assert _mode(script) == 0o700
    tighten(tmp_path / "absent")  # no error
    folder = private_dir(tmp_path / "a" / "b")
    assert _mode(folder) == 0o700
