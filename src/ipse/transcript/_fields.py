"""The struct a JSON object's chosen fields are decoded into, read as the object they stand for.

`ipse.transcript._jsonl.FieldsDecoder` decodes each kind of object into a msgspec struct of
that kind's fields. A struct of a `FieldsView` subclass is also a read-only mapping: the
object's key (``type``) with its kind, then each field, an absent one as None, the way a
dict cut to those fields reads. A reader can keep the struct as the record's data instead of
copying it into a dict: a long session holds a hundred thousand records, most of them progress
records read only for their place in the tree, and their copies cost 28 MB of a 250 MB
session's 376 MB peak (`ipse prefix`).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, ClassVar

import msgspec


class FieldsView(msgspec.Struct, eq=False):
    """Base of the field structs: a read-only `Mapping` of the key and the fields. Equal to
    any mapping holding the same items (a dict cut to the fields, another view)."""

    _key: ClassVar[str]
    _kind: ClassVar[str]
    _names: ClassVar[frozenset[str]]

    def __getitem__(self, name: str) -> Any:
        if name in self._names:
            return getattr(self, name)
        if name == self._key:
            return self._kind
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._names:
            return getattr(self, name)
        if name == self._key:
            return self._kind
        return default

    def __contains__(self, name: object) -> bool:
        return name in self._names or name == self._key

    def __iter__(self) -> Iterator[str]:
        yield from self.__struct_fields__
        yield self._key

    def __len__(self) -> int:
        return len(self.__struct_fields__) + 1

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __ne__(self, other: object) -> bool:  # (a struct's own would not ask `__eq__`)
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __repr__(self) -> str:
        return repr(dict(self.items()))


Mapping.register(FieldsView)
_TAKEN = frozenset(dir(FieldsView))


def fields_struct(kind: str, fields: tuple[str, ...], key: str) -> type[FieldsView]:
    """A struct type for objects whose ``key`` is ``kind``: one attribute per field, any JSON
    value, None when absent. A field may not be named as a mapping's method."""
    clash = sorted(set(fields) & _TAKEN)
    if clash:
        raise ValueError(f"a field named as a mapping's method: {', '.join(clash)}")
    made = msgspec.defstruct(
        "Fields",
        [(f, Any, None) for f in fields],
        bases=(FieldsView,),
        tag_field=key,
        tag=kind,
        namespace={"_key": key, "_kind": kind, "_names": frozenset(fields)},
    )
    assert issubclass(made, FieldsView)
    return made
