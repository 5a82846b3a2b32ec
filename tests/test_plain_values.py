"""Classes made by `ipse._plain.plain_dataclass` (each writes its own ``__init__``; the rest is
made without compiling code) behave as the class ``@dataclass`` makes from the same fields with
the same options: constructor and defaults (positional and keyword), repr, equality, hash,
`dataclasses.replace`, `asdict`, `fields`, pickling and copying, frozenness, ``__match_args__``
and ``__slots__``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._plain import plain_dataclass
from ipse.prefix._rules import Prices, Rules
from ipse.tokens import TokenCounter
from ipse.transcript import (
    ClaudeCodeSession,
    Conversation,
    Format,
    Message,
    Other,
    Positions,
    Text,
    Thinking,
    TokenTally,
    ToolCall,
    ToolDef,
    ToolResult,
)
from ipse.transcript._formats import Sniff

# class -> the options of the @dataclass it was: (frozen, slots)
_OPTIONS: dict[type, tuple[bool, bool]] = {
    Rules: (True, False),
    Prices: (True, False),
    Sniff: (True, True),
    Format: (True, True),
    Positions: (True, True),
    ClaudeCodeSession: (False, False),
    TokenTally: (False, False),
    Text: (True, True),
    ToolCall: (True, True),
    ToolResult: (True, True),
    Thinking: (True, True),
    Other: (True, True),
    Message: (True, True),
    ToolDef: (True, True),
    Conversation: (True, True),
}
# the classes whose own equality and hash are no dataclass's (kept, as @dataclass keeps them);
# the other classes of the model write theirs as @dataclass would (a specialised attribute
# read is faster than a generic one), and are held to it here
_OWN_EQUALITY = {Other, ToolDef}


def _twin(cls: type) -> Any:
    """The class ``@dataclass`` makes from the fields of ``cls`` with its options."""
    frozen, slots = _OPTIONS[cls]
    specs = []
    for f in dataclasses.fields(cls):
        options: dict[str, Any] = {"init": f.init, "repr": f.repr, "compare": f.compare}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            options["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(hash=f.hash, **options)))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, slots=slots)


_TWINS = {cls: _twin(cls) for cls in _OPTIONS}


def _parameters(cls: type) -> str:
    """The parameters of the constructor: names, kinds, annotations and defaults (a default
    made by a factory shows as ``<factory>``)."""
    return str(inspect.signature(cls).replace(return_annotation=inspect.Signature.empty))


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as exc:
        return "error", type(exc)


def _values(value: Any) -> list[Any]:
    return [getattr(value, f.name) for f in dataclasses.fields(value)]


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=4),
    st.tuples(st.integers()),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@pytest.mark.parametrize("cls", list(_OPTIONS), ids=lambda c: c.__name__)
def test_a_plain_dataclass_is_the_dataclass_of_its_fields(cls: type) -> None:
    twin = _TWINS[cls]
    assert dataclasses.is_dataclass(cls)
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)  # type: ignore[attr-defined]
    assert _parameters(cls) == _parameters(twin)
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(twin, "__slots__", None)
    assert ("__dict__" in dir(cls)) == ("__dict__" in dir(twin))
    if cls in _OWN_EQUALITY:  # kept
        assert cls.__eq__.__qualname__ == f"{cls.__name__}.__eq__"
    assert (cls.__hash__ is None) == (twin.__hash__ is None)


@pytest.mark.parametrize("cls", list(_OPTIONS), ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_plain_dataclass_behaves_as_its_dataclass(cls: type, data: st.DataObject) -> None:
    twin = _TWINS[cls]
    init = [f for f in dataclasses.fields(cls) if f.init]
    required = sum(
        f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING for f in init
    )
    count = data.draw(st.integers(required, len(init)))
    first = data.draw(st.lists(_VALUES, min_size=count, max_size=count))
    second = data.draw(st.lists(_VALUES, min_size=count, max_size=count) | st.just(first))
    by_name = data.draw(st.booleans())  # keyword construction as dataclasses.replace uses it
    if by_name:
        named = {f.name: value for f, value in zip(init, first, strict=False)}
        mine, theirs = cls(**named), twin(**named)
    else:
        mine, theirs = cls(*first), twin(*first)
    assert _values(mine) == _values(theirs)
    assert repr(mine) == repr(theirs)
    if cls not in _OWN_EQUALITY:
        assert (mine == cls(*second)) == (theirs == twin(*second))
        assert _outcome(lambda: hash(mine)) == _outcome(lambda: hash(theirs))
    assert mine == mine or first != first  # (a float NaN is no value of these)
    assert mine.__eq__(object()) is NotImplemented
    assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)
    assert dataclasses.astuple(mine) == dataclasses.astuple(theirs)

    change = data.draw(st.sampled_from([f.name for f in dataclasses.fields(cls)]))
    new = data.draw(_VALUES)
    replaced = _outcome(lambda: _values(dataclasses.replace(mine, **{change: new})))
    assert replaced == _outcome(lambda: _values(dataclasses.replace(theirs, **{change: new})))

    assert mine.__reduce_ex__(4)[2:] == theirs.__reduce_ex__(4)[2:]  # the pickled state
    for again in (pickle.loads(pickle.dumps(mine)), copy.copy(mine), copy.deepcopy(mine)):
        assert type(again) is cls
        assert _values(again) == _values(mine)

    assert _outcome(lambda: setattr(mine, change, new)) == _outcome(
        lambda: setattr(theirs, change, new)
    )
    assert _outcome(lambda: delattr(mine, change)) == _outcome(lambda: delattr(theirs, change))
    assert _outcome(lambda: _values(mine)) == _outcome(lambda: _values(theirs))


def test_a_value_that_holds_itself_shows_as_its_dataclass_shows_it() -> None:
    mine = ClaudeCodeSession("p", [])  # type: ignore[arg-type]
    theirs = _TWINS[ClaudeCodeSession]("p", [])
    mine.records.append(mine)  # type: ignore[arg-type]
    theirs.records.append(theirs)
    assert (
        repr(mine)
        == repr(theirs)
        == "ClaudeCodeSession(path='p', records=[...], "
        + ("subagent_files={}, warnings=[], skip_bad_lines=False)")
    )


def test_a_plain_dataclass_writes_its_own_init_and_no_setattr_when_frozen() -> None:
    class NoInit:
        x: int

    with pytest.raises(TypeError, match="writes its own __init__"):
        plain_dataclass()(NoInit)

    class Assigns:
        x: int

        def __init__(self, x: int) -> None:
            object.__setattr__(self, "x", x)

        def __setattr__(self, name: str, value: object) -> None:
            raise AssertionError

    with pytest.raises(TypeError, match="cannot write __setattr__"):
        plain_dataclass(frozen=True)(Assigns)


def test_a_token_tally_keeps_its_memo_out_of_the_repr_but_not_out_of_equality() -> None:
    class Counter:
        name = "chars"

        def count(self, text: str) -> int:
            return len(text)

    counter: TokenCounter = Counter()
    tally = TokenTally(counter)
    assert repr(tally) == f"TokenTally(counter={counter!r}, by_kind={tally.by_kind!r})"
    assert tally == TokenTally(counter)
    tally.count("four")
    assert tally != TokenTally(counter)
