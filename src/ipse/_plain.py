"""`Plain`: equality and a repr over ``__slots__``, for the value classes of the modules the
SessionStart hook imports, which do not import `dataclasses` (it imports `inspect`). The rule,
and the measurement that keeps it: docs/development.md, "Speed at the edges"."""

from __future__ import annotations

__all__ = ["Plain"]


class Plain:
    """Equality (same class, equal fields) and a repr over ``__slots__``, in their order; not
    hashable, as a mutable dataclass is not. A subclass lists its fields in ``__slots__`` and
    writes its ``__init__``."""

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
