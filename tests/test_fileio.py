"""Atomic writes: whole files or nothing, with the permissions a plain write would give."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse import fileio
from ipse.errors import InputError
from ipse.fileio import atomic_write, read_bytes


def test_new_file_gets_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.json", b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert read_bytes(tmp_path / "a.json") == b"{}"


def test_existing_file_keeps_its_mode_and_no_temporary_is_left(tmp_path: Path) -> None:
    target = tmp_path / "b.txt"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["b.txt"]


def test_unwritable_folder_is_a_clean_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write"):
        atomic_write(blocker / "inside.json", b"{}")


def test_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # open at once, so writing cannot block
    try:
        atomic_write(fifo, b'{"a": 1}')
        try:
            received = os.read(reader, 100)
        except BlockingIOError:
            received = b""
    finally:
        os.close(reader)
    assert received == b'{"a": 1}'
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


_LINE_BYTES = st.lists(st.sampled_from([b"a", b"\n", b"{}", b"\xe2\x82\xac", b"\r", b" "]))


@settings(max_examples=300, deadline=None)
@given(pieces=_LINE_BYTES, chunk=st.integers(min_value=2, max_value=7))  # 1: line buffering
def test_read_lines_splits_like_split_across_buffer_edges(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[bytes], chunk: int
) -> None:
    """Whatever the buffer size, the lines are those of ``split(b"\\n")`` (less the empty piece
    after a final newline): a line that spans many buffers comes back whole."""
    data = b"".join(pieces)
    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(data)
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fileio, "_LINE_BUFFER", chunk)
        assert list(fileio.read_lines(path)) == expected
