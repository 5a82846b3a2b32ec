"""The complete lines of a file from a byte offset on, read in blocks, and the time of a record.

A reader of ``ipse usage`` reads a file from where it stopped last time (the index keeps the
offset after the last complete line) and only the lines that hold what a bill needs: each
block is searched for a marker (``"usage"``, ``"token_count"``, ...) with ``bytes.find``, and
only the lines around a hit are handed on, so a gigabyte of tool output is scanned, never
split into lines or parsed. A line still being written (no newline yet) is left for the next
run. Blocks are `BLOCK` bytes: memory stays flat whatever the file's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ipse._os_errors import os_error

BLOCK = 8 * 1024 * 1024


def marked_lines(
    path: Path, start: int, markers: tuple[bytes, ...], end: list[int]
) -> Iterator[bytes]:
    """Each complete line from byte ``start`` on that holds one of ``markers``; ``end[0]`` is
    set to the offset after the last complete line (where the next run starts)."""
    end[0] = start
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise os_error(exc, "read", path) from exc
    with handle:
        handle.seek(start)
        carry = b""
        offset = start  # of carry's first byte
        while True:
            block = handle.read(BLOCK)
            if not block:
                break
            data = carry + block if carry else block
            last = data.rfind(b"\n")
            if last < 0:
                carry = data
                continue
            yield from _hits(data, last, markers)
            end[0] = offset + last + 1
            carry = data[last + 1 :]
            offset = end[0]


def _hits(data: bytes, last: int, markers: tuple[bytes, ...]) -> Iterator[bytes]:
    """The lines of ``data[: last + 1]`` holding a marker, in order, each once."""
    if len(markers) == 1:
        marker = markers[0]
        at = data.find(marker, 0, last)
        while at >= 0:
            begin = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at, last + 1)
            yield data[begin:stop]
            at = data.find(marker, stop, last)
        return
    found: list[tuple[int, int]] = []
    for marker in markers:
        at = data.find(marker, 0, last)
        while at >= 0:
            begin = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at, last + 1)
            found.append((begin, stop))
            at = data.find(marker, stop, last)
    for begin, stop in sorted(set(found)):
        yield data[begin:stop]


def seconds(value: object) -> float | None:
    """An ISO 8601 time (``2026-02-12T16:02:51.467Z``) as Unix seconds; None when it is not
    one (a time without a zone is read as UTC)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


__all__ = ["BLOCK", "marked_lines", "seconds"]
