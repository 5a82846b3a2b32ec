"""Plain value classes for the modules that a session-start hook imports.

The hook runs at every session start and after every compaction, so what it imports is what it
costs. `dataclasses` imports `inspect` (and with it `ast`, `dis` and `tokenize`): 8 ms, 21% of
the hook's whole start of 37 ms (`python bench/hook_plain.py`: best of 30 fresh processes). A
class of the hook's path lists its fields in ``__slots__``, writes its own ``__init__``, and
takes equality and repr over those fields from `Plain`.
"""

from __future__ import annotations


class Plain:
    """Equality (same class, equal fields) and a repr over ``__slots__``; not hashable, as a
    mutable dataclass is not."""

    __slots__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Plain)
        return self._values() == other._values()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
