"""Reading input bytes as JSON or JSONL, with errors that name the file and the position.

Binary files, empty files, truncated JSON and bad JSONL lines all become `InputError` with the
file and the line (or character) where reading stopped. ``skip_bad_lines`` lets a JSONL reader
continue past lines that fail to parse, recording a warning for each. A last line without its
newline that does not parse is a file still being written: every reader ignores it, with a
warning (`unterminated`).

`read_jsonl_fields` reads only the named fields of each line (msgspec decodes them into a
struct and skips the rest without building it), for readers of files whose lines carry large
payloads no reader uses.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Union

import orjson

from ipse import jsonio
from ipse.errors import InputError
from ipse.fileio import TEXT_HEAD_BYTES, check_head, read_bytes, read_lines
from ipse.fileio import check_text_head as check_text_head  # (the readers' one check)

if TYPE_CHECKING:
    import msgspec


class JsonlRecord(NamedTuple):
    """One JSON object of a JSONL file, with its 1-based line number (a tuple: a session
    makes hundreds of thousands, and a frozen dataclass costs three times as much to build)."""

    line: int
    data: Mapping[str, Any]


def read_text_bytes(path: str | Path) -> bytes:
    """The file's bytes, refusing empty and binary files (by their first bytes, before the
    whole read)."""
    check_text_head(path)
    data = read_bytes(path)
    check_head(data[:TEXT_HEAD_BYTES], path, whole=True)
    return data


_POS_RE = re.compile(r"line (\d+) column (\d+)")


def parse_json(data: bytes, path: str | Path) -> Any:
    """Parse a whole JSON document; a failure names the line and column."""
    try:
        return jsonio.loads(data)
    except jsonio.JSONDecodeError as exc:
        match = _POS_RE.search(str(exc))
        position = f"line {match.group(1)} column {match.group(2)}" if match else None
        reason = str(exc).split(":")[0]
        raise InputError(f"not valid JSON ({reason})", path=path, position=position) from exc


def iter_jsonl(
    data: bytes | Iterable[bytes],
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    warnings: list[str] | None = None,
) -> Iterator[JsonlRecord]:
    """JSON objects of JSONL bytes (or of its lines, with or without their newlines), one per
    non-blank line."""
    lines = _lines(data) if isinstance(data, bytes) else data
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():  # (not strip: that copies every line)
            continue
        value = _line_value(line, path, number, skip_bad_lines, warnings)
        if value is not _SKIPPED:
            yield JsonlRecord(number, value)


def _lines(data: bytes) -> Iterator[bytes]:
    """The lines of JSONL bytes, each with its newline (the last one without, when the data
    does not end with one: `unterminated` tells it apart)."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            yield data[start:]
            return
        yield data[start : end + 1]
        start = end + 1


BAD_LINE = "a line that is not valid JSON"
NOT_AN_OBJECT = "a JSONL line that is not a JSON object"


def unterminated(line: bytes, number: int, path: str | Path, warnings: list[str] | None) -> bool:
    """Whether a line that does not parse is a file's last line cut short (no newline after
    it, lines before it): a file still being written. It is then ignored, with a warning."""
    if number <= 1 or line.endswith(b"\n"):
        return False
    if warnings is not None:
        warnings.append(
            f"{path}:line {number}: ignored the unterminated last line "
            "(the file is still being written?)"
        )
    return True


def _line_value(
    line: bytes, path: str | Path, number: int, skip_bad_lines: bool, warnings: list[str] | None
) -> Any:
    """One line's whole object, or `_SKIPPED` (with its warning): orjson, and jsonio's
    fallbacks only for a line orjson refuses."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        value = _reread(line, exc, path, number, skip_bad_lines, warnings)
        if value is _SKIPPED:
            return _SKIPPED
    if type(value) is not dict and not isinstance(value, Mapping):
        if skip_bad_lines:
            if warnings is not None:
                warnings.append(f"{path}:line {number}: skipped a line that is not an object")
            return _SKIPPED
        if unterminated(line, number, path, warnings):
            return _SKIPPED
        raise InputError(NOT_AN_OBJECT, path=path, position=f"line {number}")
    return value


@functools.cache
def _fields_decoder(
    kinds: tuple[tuple[str, tuple[str, ...]], ...], key: str
) -> tuple[msgspec.json.Decoder[Any], dict[type, str]]:
    import msgspec  # (here: only readers of such files need it, and it costs ms to import)

    from ipse.transcript._fields import fields_struct

    kind_of: dict[type, str] = {}
    for kind, fields in kinds:
        kind_of[fields_struct(kind, fields, key)] = kind
    union: Any = Union[tuple(kind_of)]  # noqa: UP007 (a union of types made at run time)
    return msgspec.json.Decoder(union), kind_of


MAX_DEPTH = 1024  # orjson refuses a document nested deeper than this


def _msgspec_reads_deeper() -> bool:
    """Whether msgspec may decode a document nested deeper than `MAX_DEPTH`: its depth check
    is the interpreter's recursion check, which up to Python 3.11 counts against the recursion
    limit (1,000 by default: a line nested deeper fails, and `FieldsDecoder.whole` reads it as
    orjson does), and from 3.12 against the C stack (a line orjson refuses was decoded on
    3.13). Counting a line's brackets to tell costs a fifth of reading a session."""
    return sys.version_info >= (3, 12) or sys.getrecursionlimit() > MAX_DEPTH


class FieldsDecoder:
    """Decodes a JSON object whose ``key`` names one of ``kinds`` into a struct of that kind's
    fields (each any JSON value, None when absent), one attribute per field, which also reads
    as the cut object (`ipse.transcript._fields.FieldsView`); the object's other members are
    checked as JSON and skipped, never built. `decode` refuses an object of another kind, one
    without the key or with the key twice, and what msgspec does not read as orjson does (a
    lone surrogate, a number out of range, deep nesting): `whole` reads such a line as
    `read_jsonl` reads it. See `read_jsonl_fields`."""

    def __init__(self, kinds: Mapping[str, tuple[str, ...]], key: str = "type") -> None:
        import msgspec

        self.kinds, self.key = kinds, key
        decoder, self.kind_of = _fields_decoder(tuple(kinds.items()), key)
        self._decode = decoder.decode
        self.asdict = msgspec.structs.asdict
        # (ValidationError is a DecodeError)
        self.errors: tuple[type[Exception], ...] = (msgspec.DecodeError, RecursionError)
        self._count = _msgspec_reads_deeper()  # (whether a long line's brackets are counted)

    def decode(self, line: bytes) -> Any:
        """The line's struct. Where msgspec may decode a line nested deeper than orjson reads
        (`_msgspec_reads_deeper`), a line that may nest that deep (more than `MAX_DEPTH`
        brackets) is refused here, so that `whole` reads it."""
        if (
            self._count
            and len(line) > MAX_DEPTH
            and line.count(b"[") + line.count(b"{") > MAX_DEPTH
        ):
            raise RecursionError("nested too deep to decode by fields")
        return self._decode(line)

    def data(self, struct: Any) -> dict[str, Any]:
        """A decoded struct as the object it stands for: ``key`` and the kind's fields."""
        value: dict[str, Any] = self.asdict(struct)
        value[self.key] = self.kind_of[type(struct)]
        return value

    def whole(
        self,
        line: bytes,
        path: str | Path,
        number: int,
        skip_bad_lines: bool,
        warnings: list[str] | None,
    ) -> Mapping[str, Any] | None:
        """A line `decode` refused, read whole (cut to its kind's fields where its kind is
        one of ``kinds``); None when it is skipped (with its warning)."""
        full = _line_value(line, path, number, skip_bad_lines, warnings)
        if full is _SKIPPED:
            return None
        kind = full.get(self.key)
        if type(kind) is str and kind in self.kinds:  # (cut as the decoder cuts it)
            return {f: full.get(f) for f in self.kinds[kind]} | {self.key: kind}
        return full  # type: ignore[no-any-return]


def read_jsonl_fields(
    path: str | Path,
    kinds: Mapping[str, tuple[str, ...]],
    *,
    key: str = "type",
    skip_bad_lines: bool = False,
    warnings: list[str] | None = None,
) -> Iterator[JsonlRecord]:
    """The JSON objects of a JSONL file (as `read_jsonl`); those whose ``key`` is one of
    ``kinds`` hold only ``key`` and that kind's fields (an absent one as None), the others are
    read whole.

    Decoding only the fields costs a fraction of parsing a line whose payloads no reader uses.
    A line the fields' decoder refuses (a lone surrogate, a number out of range, deep
    nesting, ``key`` written twice, not JSON) is read as `read_jsonl` reads it, with the same
    errors and warnings, and then cut to its fields. Two things differ from a whole parse:
    integers beyond 64 bits are kept exact (orjson makes them floats), and the members outside
    the fields are checked as JSON syntax only (invalid UTF-8 or a number too large for a
    float there is no error).
    """
    check_text_head(path)
    fields = FieldsDecoder(kinds, key)
    for number, line in enumerate(read_lines(path, newlines=True), start=1):
        if not line or line.isspace():
            continue
        value: Mapping[str, Any] | None
        try:
            struct = fields.decode(line)
        except fields.errors:
            value = fields.whole(line, path, number, skip_bad_lines, warnings)
            if value is None:
                continue
        else:
            value = fields.data(struct)
        yield JsonlRecord(number, value)


_SKIPPED = object()


def _reread(
    line: bytes,
    exc: orjson.JSONDecodeError,
    path: str | Path,
    number: int,
    skip_bad_lines: bool,
    warnings: list[str] | None,
) -> Any:
    """A line orjson refused: its value by `jsonio.loads` (which reads lone surrogates), else
    `_SKIPPED` with a warning, or the one-line error."""
    try:
        return jsonio.loads(line)
    except jsonio.JSONDecodeError:
        if unterminated(line, number, path, warnings):
            return _SKIPPED
        if skip_bad_lines:
            if warnings is not None:
                warnings.append(f"{path}:line {number}: skipped a line that is not JSON")
            return _SKIPPED
        raise InputError(BAD_LINE, path=path, position=f"line {number}") from exc


def read_jsonl(
    path: str | Path, *, skip_bad_lines: bool = False, warnings: list[str] | None = None
) -> Iterator[JsonlRecord]:
    """The JSON objects of a JSONL file, read line by line (never the whole file at once); an
    empty or binary file is refused at once."""
    check_text_head(path)
    lines = read_lines(path, newlines=True)
    return iter_jsonl(lines, path, skip_bad_lines=skip_bad_lines, warnings=warnings)
