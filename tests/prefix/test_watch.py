"""``ipse prefix --watch``: new breaks in session files as they are written, one line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipse.cli.main import main
from ipse.prefix._watch import Watcher

from .sessions import Session, text, usage


def _start(folder: Path) -> tuple[Session, Path]:
    s = Session()
    s.user("start the work " * 40)
    s.assistant(text("a"), usage(0, 30_000), message_id="m1")
    s.user("more " * 10)
    s.assistant(text("b"), usage(30_000, 200), message_id="m2")
    project = folder / "projects" / "p"
    project.mkdir(parents=True)
    return s, s.write(project / "s-1.jsonl")


def _append(s: Session, path: Path, start: int) -> None:
    with path.open("a", encoding="utf-8") as out:
        for record in s.records[start:]:
            out.write(json.dumps(record) + "\n")


def test_a_new_break_is_reported_once(tmp_path: Path) -> None:
    s, path = _start(tmp_path)
    watcher = Watcher([tmp_path / "projects"])
    assert watcher.poll() == []  # what was there counts as seen
    written = len(s.records)
    s.user("after lunch " * 10, after=25 * 60)
    s.assistant(text("c"), usage(0, 30_400), message_id="m3")
    _append(s, path, written)
    found = watcher.poll()
    assert len(found) == 1
    line = found[0].line(tmp_path / "projects")
    assert "p/s-1.jsonl #2 ttl_expired" in line and "30,200 tokens" in line
    assert watcher.poll() == []  # reported once
    written = len(s.records)
    s.user("next " * 10)
    s.assistant(text("d"), usage(30_400, 100), message_id="m4")
    _append(s, path, written)
    assert watcher.poll() == []  # a call without a break says nothing


def test_a_line_still_being_written_is_read_at_the_next_poll(tmp_path: Path) -> None:
    s, path = _start(tmp_path)
    watcher = Watcher([tmp_path / "projects"])
    written = len(s.records)
    s.user("after lunch " * 10, after=25 * 60)
    s.assistant(text("c"), usage(0, 30_400), message_id="m3")
    whole = "".join(json.dumps(r) + "\n" for r in s.records[written:])
    with path.open("a", encoding="utf-8") as out:
        out.write(whole[: len(whole) - 40])
    first = watcher.poll()
    with path.open("a", encoding="utf-8") as out:
        out.write(whole[len(whole) - 40 :])
    found = first + watcher.poll()
    assert [b.row.cause.kind for b in found if b.row.cause] == ["ttl_expired"]


def test_watch_once_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s, path = _start(tmp_path)
    written = len(s.records)
    s.user("after lunch " * 10, after=25 * 60)
    s.assistant(text("c"), usage(0, 30_400), message_id="m3")
    _append(s, path, written)
    with pytest.raises(SystemExit) as exit_info:
        main(["prefix", "--watch", str(tmp_path / "projects"), "--once"])
    assert exit_info.value.code in (0, None)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "#2 ttl_expired" in out[0]
    with pytest.raises(SystemExit) as exit_info:
        main(["prefix", "--watch", str(tmp_path / "projects"), "--max-time", "0"])
    assert exit_info.value.code in (0, None)
    assert capsys.readouterr().out == ""  # breaks already there are not new
