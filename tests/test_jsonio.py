"""`ipse.jsonio.dumps` writes any mapping as the JSON object it is (`is_object` says a mapping
is one): a message whose content is read back from its file, inside a request, is written as
the dict it stands for."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from ipse import jsonio


def test_a_mapping_is_written_as_the_object_it_is() -> None:
    value = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    inside = {"messages": [MappingProxyType(value)], "n": 1}
    assert jsonio.dumps(inside) == jsonio.dumps({"messages": [value], "n": 1})
    assert jsonio.dumps(MappingProxyType(value), option=jsonio.OPT_SORT_KEYS) == jsonio.dumps(
        value, option=jsonio.OPT_SORT_KEYS
    )


def test_what_is_not_json_is_still_refused() -> None:
    with pytest.raises(TypeError):
        jsonio.dumps({"a": object()})
    assert jsonio.dumps({"a": object()}, default=lambda _: "x") == b'{"a":"x"}'
