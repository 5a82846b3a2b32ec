"""`read_jsonl_fields` against a whole parse: the same objects cut to their fields, the same
errors and warnings, for any line (generated objects written every way JSON allows, and lines
that are not JSON)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.errors import InputError
from ipse.transcript._fields import FieldsView
from ipse.transcript._formats.claude_code import RECORD_FIELDS, _read_records, session_record
from ipse.transcript._jsonl import read_jsonl, read_jsonl_fields
from tests.support.strategies import json_values

KINDS = {"user": ("uuid", "message"), "progress": ("uuid",)}

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # (beyond: kept exact, where orjson makes floats)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_values = json_values(_scalars, st.text(max_size=6), size=4, leaves=12)
_keys = st.sampled_from(
    ["type", "uuid", "parentUuid", "isSidechain", "message", "data", "toolUseResult", "typ\u00e9"]
)
_objects = st.dictionaries(
    _keys | st.text(max_size=5),
    st.sampled_from(["user", "assistant", "progress", "system", "other"]) | _values,
    max_size=6,
)


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    """One line: an object written compactly or spaced, ASCII-escaped or not, with members
    repeated; or bytes that are not a JSON object."""
    how = draw(st.integers(0, 5))
    if how == 5:
        return draw(
            st.sampled_from(
                [
                    b"[1, 2]",
                    b'"text"',
                    b"{",
                    b'{"type": "user"} trailing',
                    b'{"type": "user", "x": NaN}',
                    b'{"type": "user", "message": 1e400}',
                    b'{"type": "user", "message": "\\ud800"}',
                    b'{"type": "progress", "data": "\\udc00 lone"}',
                    b'{"type": "user", "message": "\x01"}',
                    b'{"type": "user", "data": [' + b"[" * 3000 + b"]" * 3000 + b"]}",
                    b'{"type": "user", "message": ' + b"[" * 1020 + b"]" * 1020 + b"}",
                    b'{"type": "user", "message": "\xff"}',
                    b"\xef\xbb\xbf{}",
                ]
            )
        )
    value = draw(_objects)
    text = json.dumps(
        value,
        ensure_ascii=how in (1, 3),
        separators=(",", ":") if how < 2 else (", ", ": "),
    )
    if how == 4 and value:  # a member written twice: the last one counts
        key = next(iter(value))
        text = "{" + json.dumps(key) + ": " + json.dumps(draw(_values)) + ", " + text[1:]
    return text.encode("utf-8", "surrogatepass")


def _read(reader: Any, path: Path, skip: bool) -> tuple[Any, list[str]]:
    warnings: list[str] = []
    try:
        records = list(reader(path, skip_bad_lines=skip, warnings=warnings))
    except InputError as exc:
        return f"InputError: {exc}", warnings
    return records, warnings


def _cut(records: Any) -> Any:
    """A whole parse's records as the field reader gives them."""
    if isinstance(records, str):
        return records
    out = []
    for line, data in records:
        kind = data.get("type")
        if isinstance(kind, str) and kind in KINDS:
            data = {"type": kind, **{f: data.get(f) for f in KINDS[kind]}}
        out.append((line, data))
    return out


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_line(), min_size=1, max_size=5), skip=st.booleans())
def test_fields_are_what_a_whole_parse_holds(
    tmp_path: Path, lines: list[bytes], skip: bool
) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    def fields(p: Path, **kwargs: Any) -> Any:
        return read_jsonl_fields(p, KINDS, **kwargs)

    whole, whole_warnings = _read(read_jsonl, path, skip)
    cut, cut_warnings = _read(fields, path, skip)
    assert cut == _cut(whole)
    assert cut_warnings == whole_warnings


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_line(), min_size=1, max_size=5), skip=st.booleans())
def test_session_records_are_the_field_reader_s(
    tmp_path: Path, lines: list[bytes], skip: bool
) -> None:
    """The Claude Code reader makes its records as it decodes: the same as making them from
    `read_jsonl_fields`."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    def fields(p: Path, **kwargs: Any) -> Any:
        return [session_record(*r) for r in read_jsonl_fields(p, RECORD_FIELDS, **kwargs)]

    def records(p: Path, skip_bad_lines: bool, warnings: list[str]) -> Any:
        return _read_records(p, skip_bad_lines, warnings)

    assert _read(records, path, skip) == _read(fields, path, skip)


def test_payloads_outside_the_fields_are_never_built(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(
        b'{"type": "user", "message": {"role": "user"}, "toolUseResult": {"big": "x"}}\n'
        b'{"type": "system", "subtype": "s", "detail": [1]}\n'
        b'{"uuid": "p", "data": {"type": "user"}, "type": "progress", "message": "m"}\n'
    )
    records = list(read_jsonl_fields(path, KINDS))
    assert records[0].data == {"type": "user", "uuid": None, "message": {"role": "user"}}
    assert records[1].data == {"type": "system", "subtype": "s", "detail": [1]}  # whole
    assert records[2].data == {"type": "progress", "uuid": "p"}  # its kind's fields


def test_integers_beyond_64_bits_are_kept_exact(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(
        b'{"type": "user", "message": {"n": 1180591620717411303424, "m": -9223372036854775809}}\n'
    )
    (record,) = read_jsonl_fields(path, KINDS)
    assert record.data["message"] == {"n": 2**70, "m": -(2**63) - 1}


def test_members_outside_the_fields_are_checked_as_json_syntax_only(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    for member in (b'"\xff\xfe"', b"1e400", b'{"\xff": -1e999}'):
        path.write_bytes(b'{"type": "user", "toolUseResult": ' + member + b', "uuid": "u"}\n')
        (record,) = read_jsonl_fields(path, KINDS)
        assert record.data["uuid"] == "u"
        with pytest.raises(InputError, match="line 1"):  # (a whole parse refuses it)
            list(read_jsonl(path))
    path.write_bytes(b'{"type": "user", "toolUseResult": "\x01", "uuid": "u"}\n')
    with pytest.raises(InputError, match="line 1"):
        list(read_jsonl_fields(path, KINDS))


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="msgspec nests deeper than orjson from 3.12: counted"
)
def test_a_line_of_many_brackets_is_read_by_its_fields(tmp_path: Path) -> None:
    """A line whose strings hold more brackets than orjson nests is decoded by its fields where
    msgspec fails a deeper nest by itself (up to Python 3.11): its brackets are not counted,
    and it is not read whole."""
    text = json.dumps("[{" * 1500)
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type": "user", "uuid": "u", "message": {"role": "user", "content": ' + text + "}}\n"
    )
    (record,) = _read_records(path, False, [])
    assert isinstance(record.data, FieldsView)  # (read whole, it would be a dict)
    assert record.message == {"role": "user", "content": "[{" * 1500}
