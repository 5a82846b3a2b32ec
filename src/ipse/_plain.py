"""Plain value classes for the modules that a session-start hook imports.

The hook runs at every session start and after every compaction, so what it imports is what it
costs. `dataclasses` imports `inspect` (and with it `ast`, `dis` and `tokenize`): 8 ms, 21% of
the hook's whole start of 37 ms (`python bench/hook_plain.py`: best of 30 fresh processes). A
class of the hook's path lists its fields in ``__slots__``, writes its own ``__init__``, and
takes equality and repr over those fields from `Plain`.

`plain_dataclass` is for the classes that may be dataclasses but are made at the start of a
command that counts its milliseconds (``ipse prefix``): it makes the dataclass of a class that
writes its own ``__init__`` without writing and compiling code, which is what ``@dataclass``
costs when the class is made, and makes its fields, parameters, repr and equality only when
something first asks for them (most runs never do).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (`typing` is not imported at run time: the hook's start)
if TYPE_CHECKING:
    from collections.abc import Callable
    from dataclasses import dataclass as plain_dataclass  # what a type checker is to see
    from typing import Any


__all__ = ["UNSET", "Plain", "plain_dataclass"]


class _Unset:
    def __repr__(self) -> str:  # as the signature of a dataclass's ``__init__`` shows it
        return "<factory>"


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


if not TYPE_CHECKING:

    def plain_dataclass(
        *, frozen: bool = False, slots: bool = False, eq: bool = True
    ) -> Callable[[type], type]:
        """``@dataclass(frozen=..., slots=..., eq=...)`` for a class that writes its own
        ``__init__``: the same dataclass (`dataclasses.fields`, `dataclasses.replace`,
        `dataclasses.asdict`, ``__match_args__``, ``__dataclass_params__``, pickling), whose
        ``__repr__``, ``__eq__``, ``__hash__`` and, frozen, ``__setattr__`` and ``__delattr__``
        behave as those ``@dataclass`` writes, but are made without writing and compiling code
        (``exec``), which is what ``@dataclass`` costs when the class is made (frozen: two
        functions more). Only the slots and, frozen, the refusal to assign are made with the
        class; the fields, parameters and ``__match_args__`` (from ``@dataclass`` run over the
        same declarations beside it), and the repr, equality and hash over the fields, are
        made when first asked for, whichever comes first.

        Measured on ``ipse prefix`` of a 40 KB session (valgrind's callgrind): 294.7 million
        instructions with eleven ``@dataclass`` classes and the model made eagerly so, 252.7
        million with all of them made so lazily (-14%).

        Measured: the transcript model's eight classes take 2.9 to 3.2 ms to make with
        ``@dataclass`` and 0.52 to 0.54 ms so (``python bench/plain_dataclass.py``, best of 7:
        5.5 to 5.9x); one frozen slotted class of four fields, 3.5 million instructions against
        0.5 million (valgrind's callgrind); the whole of ``ipse prefix`` on a small session,
        317.6 million instructions with the model made by ``@dataclass`` and 294.9 million so
        (-7.1%; the command is in the bench's docstring). Made so, a value is built faster
        (its ``__init__`` is the same code less a global lookup), compared and hashed as fast
        (the model writes its ``__eq__`` and ``__hash__`` as ``@dataclass`` does: an attribute
        read in code is faster than `operator.attrgetter`'s), and shown 1.4x slower (repr).

        A method the class writes itself (``__repr__``, ``__eq__``, ``__hash__``) is kept, as
        ``@dataclass`` keeps it. A type checker sees `dataclasses.dataclass` itself, given the
        same options. ``tests/test_plain_values.py`` holds each class made so to the class
        ``@dataclass`` makes from the same fields.
        """

        def make(cls: type) -> type:
            return _make(cls, frozen, slots, eq)

        return make


def _make(cls: type, frozen: bool, slots: bool, eq: bool = True) -> type:
    own = cls.__dict__
    if "__init__" not in own:
        raise TypeError(f"{cls.__name__}: a plain dataclass writes its own __init__")
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        raise TypeError(f"{cls.__name__}: a frozen dataclass cannot write __setattr__")
    # as @dataclass decides: a __hash__ of the class's own, unless Python set it to None
    # because the class wrote __eq__
    hashes = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    hashes = hashes or not eq  # (without equality, @dataclass leaves the hash as it is)
    names = _own_fields(cls)
    namespace = {name: own[name] for name in names if name in own}  # defaults, `field()`s
    made: Any = _slotted(cls, names) if slots else cls
    if not slots:
        _class_defaults(made, namespace)
    pending = _Pending(made, namespace, frozen, slots, eq)
    later = ["__dataclass_fields__", "__dataclass_params__", "__match_args__", "__repr__"]
    for name in [*later, "__eq__"] if eq else later:
        if name not in own:
            setattr(made, name, _Later(pending, name))
    if not hashes:
        made.__hash__ = _Later(pending, "__hash__") if frozen else None
    if frozen:
        _freeze(made, frozenset(names), slots and "__getstate__" not in own)
    return made  # type: ignore[no-any-return]


def _own_fields(cls: type) -> list[str]:
    """The fields the class declares, in order: its annotations less class and init-only
    variables (the annotations are text: ``from __future__ import annotations``)."""
    declared = _annotations(cls)
    return [
        name
        for name, kind in declared.items()
        if not (isinstance(kind, str) and kind.split("[", 1)[0].split(".")[-1] in _NOT_FIELDS)
    ]


_NOT_FIELDS = ("ClassVar", "InitVar", "KW_ONLY")


def _annotations(cls: type) -> dict[str, object]:
    """The class's own annotations, as ``@dataclass`` reads them (`inspect.get_annotations`
    would import `inspect`, which is what this module avoids)."""
    return cls.__dict__.get("__annotations__", {})  # type: ignore[no-any-return]  # noqa: RUF063


def _slotted(cls: type, names: list[str]) -> type:
    """``cls`` made again with ``__slots__`` for its fields, as ``@dataclass(slots=True)``
    makes it (its defaults live in the fields then, not in the class)."""
    namespace = {k: v for k, v in cls.__dict__.items() if k not in names}
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace["__slots__"] = tuple(names)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


def _class_defaults(cls: type, namespace: dict[str, object]) -> None:
    """A field given as ``field(default=...)`` leaves its default on the class, one given a
    factory or no default leaves nothing, as ``@dataclass`` does."""
    for name, value in namespace.items():
        if type(value).__name__ == "Field" and type(value).__module__ == "dataclasses":
            default = value.default  # type: ignore[attr-defined]
            if type(default).__name__ == "_MISSING_TYPE":
                delattr(cls, name)
            else:
                setattr(cls, name, default)


class _Pending:
    """What the dataclass of a class is made from, when something first asks for it: its
    fields (`dataclasses.fields`, `replace`, `asdict`), its parameters, ``__match_args__``,
    and the repr, equality and hash over its fields. Most runs never ask."""

    def __init__(
        self, cls: Any, namespace: dict[str, object], frozen: bool, slots: bool, eq: bool
    ) -> None:
        self.cls, self.namespace, self.frozen, self.slots = cls, namespace, frozen, slots
        self.eq = eq
        self.done = False

    def complete(self) -> None:
        if self.done:
            return
        from dataclasses import dataclass, fields

        cls = self.cls
        # the dataclass of the same declarations, made beside the class: its fields and
        # parameters are the class's (no method of it is taken)
        shadow = type(
            cls.__name__,
            cls.__bases__,
            {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__annotations__": _annotations(cls),
                **self.namespace,
            },
        )
        shadow = dataclass(init=False, repr=False, eq=False)(shadow)
        every = fields(shadow)
        params = shadow.__dataclass_params__  # type: ignore[attr-defined]
        params.init = params.repr = True  # what the class does
        params.eq = self.eq
        params.frozen = self.frozen
        if hasattr(params, "slots"):  # (Python 3.12 and later show it)
            params.slots = self.slots
        own = cls.__dict__
        made = {
            "__dataclass_fields__": shadow.__dataclass_fields__,  # type: ignore[attr-defined]
            "__dataclass_params__": params,
            "__match_args__": shadow.__match_args__,  # type: ignore[attr-defined]
        }
        for name, value in made.items():
            if isinstance(own.get(name), _Later):
                setattr(cls, name, value)
        if isinstance(own.get("__repr__"), _Later):
            cls.__repr__ = _repr([f.name for f in every if f.repr])
        if isinstance(own.get("__eq__"), _Later):
            cls.__eq__ = _eq(_key([f.name for f in every if f.compare]))
        if isinstance(own.get("__hash__"), _Later):
            hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
            cls.__hash__ = _hash(_key(hashed))
        self.done = True


class _Later:
    """A dataclass attribute of the class (its fields, parameters, ``__match_args__``) or a
    method over its fields, made on first use, from the class or a value."""

    def __init__(self, pending: _Pending, name: str) -> None:
        self.pending, self.name = pending, name

    def __get__(self, value: object, owner: type | None = None) -> Any:
        self.pending.complete()  # (which puts the real attribute in this one's place)
        return getattr(self.pending.cls if value is None else value, self.name)


def _key(names: list[str]) -> Callable[[object], tuple[object, ...]]:
    """The tuple of the named fields of a value (what @dataclass compares and hashes)."""
    from operator import attrgetter

    if len(names) > 1:
        return attrgetter(*names)
    getters = [attrgetter(name) for name in names]  # attrgetter of one name gives no tuple
    return lambda value: tuple([get(value) for get in getters])


def _repr(names: list[str]) -> Callable[[object], str]:
    from _thread import get_ident

    shown = _key(names)
    form = ", ".join(f"{name}={{!r}}" for name in names)  # text={!r}, origin={!r}
    running: set[tuple[int, int]] = set()

    def __repr__(self: object) -> str:
        key = (id(self), get_ident())
        if key in running:  # a value that holds itself, as @dataclass's repr shows it
            return "..."
        running.add(key)
        try:
            return f"{self.__class__.__qualname__}({form.format(*shown(self))})"
        finally:
            running.discard(key)

    return __repr__


def _eq(key: Callable[[object], tuple[object, ...]]) -> Callable[[object, object], bool]:
    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(key: Callable[[object], tuple[object, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(key(self))

    return __hash__


def _freeze(cls: Any, names: frozenset[str], pickles: bool) -> None:
    """Assignment and deletion refused, as in a frozen dataclass, and its state for pickling a
    slotted one."""

    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    if pickles:
        cls.__getstate__, cls.__setstate__ = _getstate, _setstate


def _getstate(self: object) -> list[object]:
    from dataclasses import fields

    return [getattr(self, f.name) for f in fields(self)]  # type: ignore[arg-type]


def _setstate(self: object, state: list[object]) -> None:
    from dataclasses import fields

    for f, value in zip(fields(self), state, strict=False):  # type: ignore[arg-type]
        object.__setattr__(self, f.name, value)
