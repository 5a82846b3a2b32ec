"""Plain value classes for the modules that a session-start hook imports.

The hook runs at every session start and after every compaction, so what it imports is what it
costs. `dataclasses` imports `inspect` (and with it `ast`, `dis` and `tokenize`): 8 ms, 21% of
the hook's whole start of 37 ms (`python bench/hook_plain.py`: best of 30 fresh processes). A
class of the hook's path lists its fields in ``__slots__``, writes its own ``__init__``, and
takes equality and repr over those fields from `Plain`.

`Frozen` is the same for a value that a frozen dataclass would hold, on paths where making the
dataclass costs more than the work: ``@dataclass`` writes and compiles its methods when the class
is made, about a millisecond a class (3.5 million instructions under valgrind's cachegrind), and
``ipse prefix`` on a small session made sixteen of them before it read a line.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (`typing` is not imported at run time: the hook's start)
if TYPE_CHECKING:
    from typing import Any


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""The default of a parameter whose field a dataclass would fill from ``default_factory``
(None may be a value given)."""


class Plain:
    """Equality (same class, equal fields) and a repr over ``__slots__``; not hashable, as a
    mutable dataclass is not."""

    __slots__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]
    # the fields in order (default: ``__slots__``, which ruff keeps sorted); those left out of
    # equality and repr (a memo: ``field(compare=False, repr=False)``); those left out of the
    # repr alone (``field(repr=False)``)
    _fields: tuple[str, ...] = ()
    _uncompared: tuple[str, ...] = ()
    _unshown: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        names = self._fields or self.__slots__
        return tuple(getattr(self, name) for name in names if name not in self._uncompared)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Plain)
        return self._values() == other._values()

    def __repr__(self) -> str:
        hidden = (*self._uncompared, *self._unshown)
        names = self._fields or self.__slots__
        shown = [name for name in names if name not in hidden]
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__name__}({fields})"


class Frozen(Plain):
    """A `Plain` value that cannot be changed, hashed over its compared fields, as a frozen
    dataclass is: its ``__init__`` sets the fields with ``object.__setattr__``."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")
