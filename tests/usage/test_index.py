"""The usage index: a run reads only what changed, proven by counting the files opened.

Each test runs `collect` twice or more over one history and counts, with the readers' own
line source wrapped (`ipse.usage._lines.marked_lines`: every session file is read through it),
which files the later run opened and from which offset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipse.usage import _lines as lines_module
from ipse.usage import collect, group, total
from tests.conftest import SHARED
from tests.usage.history import assistant, folders, shared_history, usage, write_jsonl


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every (file, offset) a reader starts reading at, in this process."""
    seen: list[tuple[str, int]] = []
    real = lines_module.marked_lines

    def counting(path: Path, start: int, markers: Any, end: list[int]) -> Iterator[bytes]:
        seen.append((str(path), start))
        return real(path, start, markers, end)

    for module in ("_claude", "_codex", "_gemini", "_proxy"):
        monkeypatch.setattr(f"ipse.usage.{module}.marked_lines", counting)
    return seen


def _calls(claude: Path, store: str | None = None) -> int:
    return total(group(collect(folders(claude), store=store, jobs=1).ledger, "day")).calls


def _session(root: Path) -> Path:
    return write_jsonl(root / "projects" / "p" / "s1.jsonl", [
        assistant("2026-03-01T10:00:00Z", usage(100), message_id="m1", request_id="r1"),
        assistant("2026-03-01T10:01:00Z", usage(200), message_id="m2", request_id="r2"),
    ])  # fmt: skip


@SHARED
def test_nothing_changed_opens_no_session_file(
    shared_data: Path, tmp_path: Path, opened: list[tuple[str, int]]
) -> None:
    claude, _ = shared_history(shared_data, tmp_path)
    first = _calls(claude)
    assert len(opened) == len(list((claude / "projects").rglob("*.jsonl")))
    opened.clear()
    assert _calls(claude) == first
    assert opened == []


def test_an_appended_call_is_read_from_where_the_last_run_stopped(
    tmp_path: Path, opened: list[tuple[str, int]]
) -> None:
    path = _session(tmp_path)
    assert _calls(tmp_path) == 2
    size = path.stat().st_size
    opened.clear()
    write_jsonl(path, [assistant("2026-03-01T10:02:00Z", usage(300), message_id="m3",
                                 request_id="r3")], append=True)  # fmt: skip
    assert _calls(tmp_path) == 3
    assert opened == [(str(path), size)]


def test_a_record_of_a_call_already_counted_appended_later_updates_that_call(
    tmp_path: Path,
) -> None:
    path = _session(tmp_path)
    _calls(tmp_path)
    write_jsonl(path, [assistant("2026-03-01T10:01:01Z", usage(200, output=99), message_id="m2",
                                 request_id="r2")], append=True)  # fmt: skip
    summed = total(group(collect(folders(tmp_path), jobs=1).ledger, "day"))
    assert (summed.calls, summed.output) == (2, 10 + 99)


def test_a_half_written_line_is_left_for_the_next_run(tmp_path: Path) -> None:
    path = _session(tmp_path)
    line = assistant("2026-03-01T10:02:00Z", usage(300), message_id="m3", request_id="r3")
    text = __import__("json").dumps(line)
    with path.open("a") as out:
        out.write(text[:40])
    assert _calls(tmp_path) == 2
    with path.open("a") as out:
        out.write(text[40:] + "\n")
    assert _calls(tmp_path) == 3


def test_a_truncated_or_rewritten_file_is_read_again_from_the_start(
    tmp_path: Path, opened: list[tuple[str, int]]
) -> None:
    path = _session(tmp_path)
    assert _calls(tmp_path) == 2
    opened.clear()
    write_jsonl(path, [assistant("2026-03-01T11:00:00Z", usage(50), message_id="x",
                                 request_id="y")])  # fmt: skip
    assert _calls(tmp_path) == 1  # truncated: the old calls are gone
    assert opened == [(str(path), 0)]
    opened.clear()
    before = path.stat()
    data = path.read_bytes().replace(b'"x"', b'"z"')  # the same size, other bytes
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert _calls(tmp_path) == 1
    assert opened == [(str(path), 0)]


def test_a_replaced_file_and_a_removed_one(tmp_path: Path, opened: list[tuple[str, int]]) -> None:
    path = _session(tmp_path)
    other = write_jsonl(tmp_path / "projects" / "p" / "s2.jsonl", [
        assistant("2026-03-02T10:00:00Z", usage(10), message_id="o", request_id="o")])  # fmt: skip
    assert _calls(tmp_path) == 3
    other.unlink()
    opened.clear()
    assert _calls(tmp_path) == 2
    assert opened == []
    replacement = path.with_name("new")
    replacement.write_bytes(path.read_bytes() + path.read_bytes().replace(b"m1", b"m9"))
    os.replace(replacement, path)  # another inode, grown
    assert _calls(tmp_path) == 3
    assert opened == [(str(path), 0)]


def test_the_index_on_postgresql(
    tmp_path: Path, pg_url: str, opened: list[tuple[str, int]]
) -> None:
    path = _session(tmp_path)
    assert _calls(tmp_path, pg_url) == 2
    opened.clear()
    assert _calls(tmp_path, pg_url) == 2
    assert opened == []
    write_jsonl(path, [assistant("2026-03-01T10:02:00Z", usage(300), message_id="m3",
                                 request_id="r3")], append=True)  # fmt: skip
    assert _calls(tmp_path, pg_url) == 3
    assert [start for _, start in opened] == [
        path.stat().st_size - len(path.read_bytes().splitlines()[-1]) - 1
    ]
