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


# Outputs that carry conversation content are the user's data too: 0600 when ipse creates them,
# whatever the umask; a file that already exists keeps the mode its owner gave it.


def _ipse_in(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "IPSE_HOME": str(tmp_path / "home"), "IPSE_STATE_DIR": ""},
        umask=0,
        check=False,
    )


def test_a_handoff_body_a_report_and_an_exported_twin_are_private(tmp_path: Path) -> None:
    body, page, twin = tmp_path / "out.json", tmp_path / "report.html", tmp_path / "twin.json"
    commands = [
        ("handoff", str(EXAMPLE), "--at", "end", "-o", str(body)),
        ("report", str(EXAMPLE), "-o", str(page)),
        ("twin", "init", "ada"),
        ("twin", "export", "ada", "-o", str(twin)),
    ]
    for args in commands:
        done = _ipse_in(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert {p.name: _mode(p) for p in (body, page, twin)} == {
        p.name: 0o600 for p in (body, page, twin)
    }


def test_an_existing_output_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    body = tmp_path / "out.json"
    body.write_text("{}")
    body.chmod(0o644)
    done = _ipse_in(tmp_path, "handoff", str(EXAMPLE), "--at", "end", "-o", str(body))
    assert done.returncode == 0, done.stderr
    assert body.read_text() != "{}" and _mode(body) == 0o644


def test_files_ipse_writes_into_a_state_folder_are_private(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("an artifact\n")
    for args in [
        ("state", "init", "--goal", "port the parser", "--done", "tests pass"),
        ("state", "next", "write the tokenizer"),
        ("state", "invariant", "no regex lexer", "--reason", "too slow"),
        ("state", "stamp", "notes written", "--artifact", "notes.txt"),
        ("state", "rotate"),
    ]:
        done = _ipse_in(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
    state = tmp_path / "state"
    modes = {p.name: _mode(p) for p in state.iterdir()}
    assert len(modes) >= 6, modes
    assert modes == dict.fromkeys(modes, 0o600)
    assert _mode(state) == 0o700


def test_an_output_under_a_regular_file_says_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("a file\n")
    for target in ("plain/out.json", "plain/deeper/out.json"):
        done = _ipse_in(tmp_path, "handoff", str(EXAMPLE), "--at", "end", "-o", target)
        assert done.returncode == 2
        assert done.stderr == f"ipse: error: {target}: cannot write: plain is not a directory\n"
    assert (tmp_path / "plain").read_text() == "a file\n"
    assert not (tmp_path / "home" / "ipse.db").exists()  # nothing archived either
