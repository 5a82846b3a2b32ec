"""The write-ahead log: one JSON line per state transition, checksummed, chained, appended.

Each line is a JSON object (ASCII, sorted keys) with ``seq`` (1-based within this log),
``t`` (UTC time), ``rev`` (git short revision or ``no-git``), ``kind``, ``text``, kind-specific
fields, ``prev`` (a hash of the previous valid line, so a deleted or edited line breaks the
chain), ``mac`` (an HMAC of the rest under ipse's secret key, see `ipse.statedir._seal`; logs
written before ipse signed its records have none) and ``c`` (a checksum of the rest, so a torn
or corrupted line is recognised and skipped). Lines are appended with one ``write`` under the
folder lock and fsynced before the caller touches the file the line describes.

Readers that need only the newest records (``resume``) read the file from its end in blocks,
so their cost does not grow with the log's length; ``verify`` reads it forward, whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ipse._os_errors import os_error
from ipse._plain import Plain
from ipse._sha256 import sha256
from ipse.errors import InputError
from ipse.statedir import _json as state_json
from ipse.statedir import _seal as seal
from ipse.statedir._files import FILE_MODE, open_regular

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

KINDS_WITH_NEXT = ("init", "next", "rotate")
LONG_WAL_LINES = 10_000
_FIRST_BLOCK = 4096
_BLOCK = 1024 * 1024


def utc_now() -> str:
    """The current UTC time as ``2025-01-31T12:00:00.123Z``."""
    from datetime import UTC, datetime  # (here: the hook writes no record)

    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def _checksum(canonical: bytes) -> str:
    return sha256(canonical).hexdigest()[:16]


def line_hash(raw: bytes) -> str:
    """The chain hash of one line (its bytes without the newline)."""
    return sha256(raw).hexdigest()[:16]


def encode(body: dict[str, Any], key: bytes | None = None) -> bytes:
    """One WAL line (without its newline) for ``body``: signed with ``mac`` when a key is
    given (without one, a ``mac`` already in ``body`` is kept as it is), then with the
    checksum ``c`` added."""
    clean = {k: v for k, v in body.items() if k != "c"}
    if key is not None:
        clean.pop("mac", None)
        clean["mac"] = seal.mac(key, _canonical(clean))
    return _canonical({**clean, "c": _checksum(_canonical(clean))})


def signed_by(data: dict[str, Any], key: bytes) -> bool:
    """Whether a decoded record's ``mac`` was made with ``key``."""
    claimed = data.get("mac")
    if not isinstance(claimed, str):
        return False
    clean = {k: v for k, v in data.items() if k not in ("c", "mac")}
    return seal.mac_ok(key, _canonical(clean), claimed)


def decode(raw: bytes) -> dict[str, Any] | None:
    """The record a line holds, or None when the line is torn, corrupted or not a record."""
    try:
        data = state_json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    check = data.pop("c", None)
    if not isinstance(check, str) or _checksum(_canonical(data)) != check:
        return None
    if not isinstance(data.get("kind"), str) or not isinstance(data.get("seq"), int):
        return None
    return data


class Record(Plain):
    """One valid WAL line: its decoded fields and its raw bytes."""

    __slots__ = ("data", "line", "raw")

    def __init__(self, data: dict[str, Any], raw: bytes, line: int | None = None) -> None:
        self.data = data
        self.raw = raw
        self.line = line  # 1-based line number, known when the log was read forward

    @property
    def kind(self) -> str:
        return str(self.data["kind"])

    @property
    def seq(self) -> int:
        return int(self.data["seq"])

    @property
    def text(self) -> str:
        return str(self.data.get("text", ""))

    def next_step(self) -> tuple[str, str] | None:
        """(text, sha256 of 99_next.md) when this record sets the next step."""
        if self.kind == "next":
            return str(self.data["text"]), str(self.data["sha256"])
        if self.kind in ("init", "rotate"):
            return str(self.data["next_text"]), str(self.data["next_sha256"])
        return None

    def summary(self) -> str:
        """The record as one human line: time, revision, kind and text."""
        text = " ".join(self.text.split())
        return f"{self.data.get('t', '?')} {self.data.get('rev', '?')} {self.kind}: {text}"


class BadLine(Plain):
    """A line that is not a valid record; ``torn`` when it looks like an interrupted write.

    ``line`` is its 1-based number when the log was read forward; a backward read knows its
    byte ``offset`` instead (`line_number` turns one into the other)."""

    __slots__ = ("line", "offset", "raw", "torn")

    def __init__(self, line: int | None, raw: bytes, torn: bool, offset: int | None = None) -> None:
        self.line = line
        self.raw = raw
        self.torn = torn
        self.offset = offset


def _is_torn(raw: bytes) -> bool:
    return raw.startswith(b'{"') and not raw.rstrip().endswith(b"}")


def iter_lines_reversed(path: Path) -> Iterator[bytes]:
    """The non-empty lines of a file, last first, read in blocks from the end."""
    for _, line in lines_reversed_at(path):
        yield line


def lines_reversed_at(path: Path) -> Iterator[tuple[int, bytes]]:
    """The non-empty lines of a file with the byte offset each starts at, last first."""
    with os.fdopen(open_regular(path, os.O_RDONLY), "rb") as handle:
        pos = handle.seek(0, os.SEEK_END)
        rest = b""
        block = _FIRST_BLOCK  # most reads want only the last line or two: start small, grow
        while pos > 0:
            size = min(block, pos)
            block = min(block * 4, _BLOCK)
            pos -= size
            handle.seek(pos)
            chunk = handle.read(size) + rest
            parts = chunk.split(b"\n")
            rest = parts[0]
            end = pos + len(chunk)
            for part in reversed(parts[1:]):
                end -= len(part)
                if part:
                    yield end, part
                end -= 1  # the newline before it
        if rest:
            yield 0, rest


def line_number(path: Path, offset: int) -> int:
    """The 1-based number of the line that starts at byte ``offset`` (the newlines before it
    counted in blocks: paid only when a backward read met a bad line and names it)."""
    newlines = 0
    with os.fdopen(open_regular(path, os.O_RDONLY), "rb") as handle:
        left = offset
        while left > 0:
            chunk = handle.read(min(left, _BLOCK))
            if not chunk:
                break
            newlines += chunk.count(b"\n")
            left -= len(chunk)
    return newlines + 1


class Tail(Plain):
    """What a backward read found: the last record, the wanted one, and bad lines on the way."""

    __slots__ = ("bad", "last", "match")

    def __init__(self) -> None:
        self.last: Record | None = None
        self.match: Record | None = None
        self.bad: list[BadLine] = []


def tail(path: Path, want: Callable[[Record], bool] | None = None) -> Tail:
    """Read from the end until the last valid record (and the newest one ``want`` accepts)."""
    found = Tail()
    try:
        for offset, raw in lines_reversed_at(path):
            data = decode(raw)
            if data is None:
                found.bad.append(BadLine(None, raw, _is_torn(raw), offset))
                continue
            record = Record(data, raw)
            if found.last is None:
                found.last = record
            if want is None or want(record):
                found.match = record
                break
    except FileNotFoundError:
        return found
    except OSError as exc:
        raise os_error(exc, "read", path) from exc
    return found


def last_next(path: Path) -> Tail:
    """The newest record that set the next step, read from the end."""
    return tail(path, lambda r: r.kind in KINDS_WITH_NEXT)


class Scan(Plain):
    """A whole log read forward: its valid records and its bad lines, in order."""

    __slots__ = ("bad", "records")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.bad: list[BadLine] = []


def read_all(path: Path) -> Scan:
    """Every line of the log, forward."""
    scan = Scan()
    try:
        with os.fdopen(open_regular(path, os.O_RDONLY), "rb") as handle:
            for number, line in enumerate(handle, start=1):
                raw = line.rstrip(b"\n")
                if not raw:
                    continue
                data = decode(raw)
                if data is None:
                    scan.bad.append(BadLine(number, raw, _is_torn(raw)))
                else:
                    scan.records.append(Record(data, raw, number))
    except OSError as exc:
        raise os_error(exc, "read", path) from exc
    return scan


def new_body(kind: str, text: str, rev: str, **fields: Any) -> dict[str, Any]:
    """A record body before ``seq``/``prev``/``c`` are filled in by `append`."""
    return {"kind": kind, "t": utc_now(), "rev": rev, "text": text, **fields}


def first_line(body: dict[str, Any]) -> bytes:
    """The first line of a new log (seq 1, no predecessor, signed), with its newline."""
    return encode({**body, "seq": 1, "prev": None}, seal.key()) + b"\n"


def first_hash(path: Path) -> str | None:
    """The chain hash of the log's first line, or None when the log is empty or missing."""
    try:
        with os.fdopen(open_regular(path, os.O_RDONLY), "rb") as handle:
            raw = handle.readline().rstrip(b"\n")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    return line_hash(raw) if raw else None


def anchor(path: Path, last: Record) -> None:
    """Record ``last`` as the newest record of the log at ``path`` (see `_seal`)."""
    first = first_hash(path)
    if first is not None:
        seal.write_anchor(path.parent, first, last.seq, line_hash(last.raw))


def _last_valid(fd: int, size: int) -> tuple[Record | None, bool]:
    """The last valid record within the final block of an open log, and whether the log
    ends with a newline; (None, ...) when that block holds no valid record."""
    start = max(0, size - _FIRST_BLOCK)
    chunk = os.pread(fd, size - start, start)
    lines = chunk.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece may be the end of a longer line
    for raw in reversed(lines):
        if raw:
            data = decode(raw)
            if data is not None:
                return Record(data, raw), chunk.endswith(b"\n")
    return None, chunk.endswith(b"\n")


def append(path: Path, body: dict[str, Any]) -> Record:
    """Append one record (caller holds the folder lock), fsync, and return it.

    ``seq`` and ``prev`` follow the last valid record; a torn last line is closed with a
    newline first so it stays one bad line and never swallows the new record.
    """
    try:
        fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise os_error(exc, "open", path) from exc
    try:
        size = os.fstat(fd).st_size
        last, ends_clean = _last_valid(fd, size) if size else (None, True)
        if last is None and size:
            last = tail(path).last  # long or damaged lines at the end: look further back
        seq = last.seq + 1 if last is not None else 1
        prev = line_hash(last.raw) if last is not None else None
        fields = {**body, "seq": seq, "prev": prev}
        raw = encode(fields, seal.key())
        data = memoryview((b"" if ends_clean else b"\n") + raw + b"\n")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    except OSError as exc:
        raise os_error(exc, "append", path) from exc
    finally:
        os.close(fd)
    record = Record(decode(raw) or fields, raw)
    anchor(path, record)
    return record
