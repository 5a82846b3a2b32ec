"""The write-ahead log: encoding round trips, corruption detection, reading from the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.statedir import _wal as wal
from tests.support.strategies import json_values

values = json_values(
    st.none() | st.booleans() | st.integers() | st.text(), st.text(), size=4, leaves=10
)
bodies = st.fixed_dictionaries(
    {"kind": st.sampled_from(["next", "checkpoint", "invariant"]), "seq": st.integers(1, 10**9)},
    optional={"text": st.text(), "extra": values},
)


@given(bodies)
def test_encode_decode_round_trip(body: dict[str, Any]) -> None:
    raw = wal.encode(body)
    assert b"\n" not in raw
    assert raw.isascii()
    assert wal.decode(raw) == body


@given(bodies, st.data())
def test_a_changed_byte_never_decodes_to_a_different_record(
    body: dict[str, Any], data: Any
) -> None:
    raw = bytearray(wal.encode(body))
    index = data.draw(st.integers(0, len(raw) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[index]))
    raw[index] = new
    decoded = wal.decode(bytes(raw))
    assert decoded is None or decoded == body  # e.g. whitespace-insensitive JSON re-parse


@given(bodies, st.integers(1, 200))
def test_a_truncated_line_is_rejected(body: dict[str, Any], cut: int) -> None:
    raw = wal.encode(body)
    assert wal.decode(raw[: max(0, len(raw) - cut)]) is None


@settings(max_examples=50)
@given(st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=40))
def test_reverse_lines_match_forward_lines(tmp_path_factory: Any, lines: list[bytes]) -> None:
    path = tmp_path_factory.mktemp("wal") / "f"
    path.write_bytes(b"\n".join(lines))
    expected = [line for line in lines if line][::-1]
    assert list(wal.iter_lines_reversed(path)) == expected


def test_reverse_lines_cross_block_boundaries(tmp_path: Path) -> None:
    lines = [f"line-{i:06d}-".encode() * (i % 50 + 1) for i in range(3000)]
    path = tmp_path / "f"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert list(wal.iter_lines_reversed(path)) == lines[::-1]


def test_append_chains_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / ".wal"
    first = wal.append(path, wal.new_body("checkpoint", "a", "no-git"))
    second = wal.append(path, wal.new_body("checkpoint", "b", "no-git"))
    assert (first.seq, second.seq) == (1, 2)
    assert second.data["prev"] == wal.line_hash(first.raw)
    assert wal.tail(path).last == second


def test_append_after_a_torn_line_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / ".wal"
    first = wal.append(path, wal.new_body("checkpoint", "a", "no-git"))
    with open(path, "ab") as handle:
        handle.write(b'{"c":"0000","kind":"next","te')  # a write cut short
    wal.append(path, wal.new_body("checkpoint", "b", "no-git"))
    scan = wal.read_all(path)
    assert [r.text for r in scan.records] == ["a", "b"]
    assert len(scan.bad) == 1 and scan.bad[0].torn
    assert scan.records[1].seq == 2
    assert scan.records[1].data["prev"] == wal.line_hash(first.raw)


def test_tail_skips_bad_lines_and_reports_them(tmp_path: Path) -> None:
    path = tmp_path / ".wal"
    wal.append(path, wal.new_body("next", "step one", "no-git", sha256="x" * 64))
    wal.append(path, wal.new_body("checkpoint", "c", "no-git"))
    with open(path, "ab") as handle:
        handle.write(b"garbage that is not json\n")
    found = wal.last_next(path)
    assert found.match is not None and found.match.text == "step one"
    assert found.last is not None and found.last.text == "c"
    assert len(found.bad) == 1 and not found.bad[0].torn


def test_tail_of_a_missing_log_is_empty(tmp_path: Path) -> None:
    found = wal.tail(tmp_path / "nothing")
    assert found.last is None and found.match is None and found.bad == []
