"""The helpers that keep the SessionStart hook's imports small: the interpreter's own SHA-256
gives hashlib's digests, and plain classes compare and print by their fields."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse._sha256 import sha256
from ipse.statedir._budget import Section
from ipse.statedir._wal import BadLine


@given(st.binary(max_size=5000), st.binary(max_size=200))
def test_the_digests_are_hashlib_s(data: bytes, more: bytes) -> None:
    ours = sha256(data)
    ours.update(more)
    assert ours.hexdigest() == hashlib.sha256(data + more).hexdigest()


def test_plain_classes_compare_by_class_and_fields() -> None:
    section = Section("10_invariants.md", "body", 1, 1, keep_tail=True)
    assert section == Section("10_invariants.md", "body", 1, 1, keep_tail=True)
    assert section != Section("10_invariants.md", "body", 1, 1)
    assert section.with_body("other") == Section("10_invariants.md", "other", 1, 1, True)
    assert BadLine(1, b"x", False) != BadLine(1, b"x", True)
    assert (BadLine(1, b"x", False) == ("x",)) is False
    assert repr(BadLine(1, b"x", False)) == "BadLine(line=1, offset=None, raw=b'x', torn=False)"
    with pytest.raises(TypeError):
        hash(section)
