"""A decoded field struct reads as the object cut to its fields: the same items, the same
order, equal to that dict, and read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse.transcript._fields import FieldsView, fields_struct
from tests.support.strategies import json_values

FIELDS = ("uuid", "parentUuid", "message")
_scalars = st.none() | st.booleans() | st.integers() | st.text()
_values = json_values(_scalars, st.text(max_size=4), size=3, leaves=8)


def _decode(kind: str, obj: dict[str, Any]) -> FieldsView:
    struct = fields_struct(kind, FIELDS, "type")
    return msgspec.json.decode(msgspec.json.encode(obj | {"type": kind}), type=struct)


@given(st.dictionaries(st.sampled_from([*FIELDS, "other", "data"]), _values))
def test_a_view_is_the_object_cut_to_its_fields(obj: dict[str, Any]) -> None:
    view = _decode("user", obj)
    cut = {f: obj.get(f) for f in FIELDS} | {"type": "user"}
    assert isinstance(view, Mapping)
    assert view == cut and cut == view
    assert (view != cut) is False  # (ne is eq negated)
    assert list(view) == list(cut) and list(view.items()) == list(cut.items())
    assert list(view.values()) == list(cut.values()) and len(view) == len(cut)
    assert dict(view) == cut and {**view} == cut and repr(view) == repr(cut)
    for name in [*FIELDS, "type", "other", "data"]:
        assert (name in view) == (name in cut)
        assert view.get(name) == cut.get(name)
        assert view.get(name, "absent") == cut.get(name, "absent")
    with pytest.raises(KeyError):
        view["other"]
    assert view != {**cut, "extra": 1} and view != [1]


def test_views_of_other_kinds_or_values_differ() -> None:
    a = _decode("user", {"uuid": "a"})
    assert a != _decode("progress", {"uuid": "a"})
    assert a != _decode("user", {"uuid": "b"})
    assert a == _decode("user", {"uuid": "a"})


def test_a_view_is_read_only() -> None:
    view = _decode("user", {"uuid": "a"})
    with pytest.raises(TypeError):
        view["uuid"] = "b"  # type: ignore[index]


def test_a_field_named_as_a_method_is_refused() -> None:
    with pytest.raises(ValueError, match="get, items"):
        fields_struct("user", ("uuid", "items", "get"), "type")
