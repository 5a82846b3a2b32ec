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
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse._plain import _Later, plain_dataclass
from ipse.prefix._actual import Agreement
from ipse.prefix._causes import Cause, Side
from ipse.prefix._growing import SharedHistory
from ipse.prefix._report import PrefixReport
from ipse.prefix._requests import RequestLog
from ipse.prefix._requests import _Pending as Pending
from ipse.prefix._rules import Prices, Rules
from ipse.prefix._simulate import Miss, Step
from ipse.prefix._simulate import _Entry as Entry
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
from ipse.transcript.formats.claude_code_journal import JournaledRequest

from .prefix.sessions import Session, text, tool_use, usage

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
    Miss: (True, True),
    Entry: (False, True),
    Agreement: (True, True),
    Cause: (True, True),
    Side: (True, True),
    RequestLog: (False, True),
    Pending: (True, True),
    PrefixReport: (False, True),
    JournaledRequest: (True, True),
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


def _fresh(frozen: bool, slots: bool) -> tuple[Any, Any]:
    """A class made now by `plain_dataclass` (nothing has asked for its dataclass yet), and
    the class ``@dataclass`` makes from the same source."""

    def declare() -> type:
        class Point:
            """A point."""

            x: int
            y: list[int] = dataclasses.field(default_factory=list, compare=False)
            label: str = dataclasses.field(default="p", repr=False)

            def __init__(self, x: int, y: list[int] | None = None, label: str = "p") -> None:
                values = {"x": x, "y": [] if y is None else y, "label": label}
                for name, value in values.items():
                    object.__setattr__(self, name, value)

        return Point

    mine: Any = plain_dataclass(frozen=frozen, slots=slots)(declare())
    theirs: Any = dataclasses.dataclass(frozen=frozen, slots=slots)(declare())
    return mine, theirs


_FIRST_ASKS: dict[str, Callable[[Any, Any], Any]] = {
    "repr": lambda cls, v: repr(v),
    "eq": lambda cls, v: v == cls(1),
    "ne": lambda cls, v: v != cls(2),
    "hash": lambda cls, v: _outcome(lambda: hash(v)),
    "match": lambda cls, v: cls.__match_args__,
    "fields": lambda cls, v: [f.name for f in dataclasses.fields(v)],
    "params": lambda cls, v: repr(cls.__dataclass_params__),
    "is_dataclass": lambda cls, v: dataclasses.is_dataclass(cls),
    "replace": lambda cls, v: _values(dataclasses.replace(v, x=5)),
    "asdict": lambda cls, v: dataclasses.asdict(v),
    "pickled": lambda cls, v: v.__reduce_ex__(4)[2:],  # (a local class: its state, a copy)
    "copy": lambda cls, v: _values(copy.deepcopy(v)),
    "method": lambda cls, v: cls.__repr__(v),
}


@pytest.mark.parametrize("first", list(_FIRST_ASKS))
@pytest.mark.parametrize(("frozen", "slots"), [(True, True), (True, False), (False, False)])
def test_whatever_is_asked_first_the_class_answers_as_its_dataclass(
    first: str, frozen: bool, slots: bool
) -> None:
    """The dataclass of a plain class is made on first use: the first question (a repr, an
    equality, a hash, a pattern's match, `fields`...) gets the dataclass's answer, and so
    does every question after it."""
    mine, theirs = _fresh(frozen, slots)
    assert isinstance(mine.__dict__["__dataclass_fields__"], _Later)  # (until asked)
    value, twin_value = mine(1, [2]), theirs(1, [2])
    assert _FIRST_ASKS[first](mine, value) == _FIRST_ASKS[first](theirs, twin_value)
    for ask in _FIRST_ASKS.values():
        assert ask(mine, value) == ask(theirs, twin_value)
    assert getattr(mine, "__slots__", None) == getattr(theirs, "__slots__", None)
    assert value == mine(1, [3])
    assert value != mine(2)  # y is not compared


def test_a_replay_makes_no_dataclass(tmp_path: Path) -> None:
    """``ipse prefix`` on a session asks none of the model's classes for its dataclass (what
    made the command's start slow); `fields` still answers afterwards."""
    import subprocess
    import sys

    s = Session()
    s.user("read the files " * 30)
    s.assistant(tool_use("t1"), usage(0, 3_000), message_id="m1")
    s.result("t1", "a.txt b.txt")
    s.assistant(text("two files"), usage(3_000, 200), message_id="m2")
    session = s.write(tmp_path / "s.jsonl")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ipse.prefix import analyze, read_requests\n"
        "from ipse._plain import _Later\n"
        "import ipse.transcript as t\n"
        "log = read_requests(Path(sys.argv[1]), None)\n"
        "report = analyze(log.requests, None)\n"
        "report.to_json(); report.summary()\n"
        "asked = [c.__name__ for c in (t.Text, t.ToolCall, t.ToolResult, t.Message, t.Positions)\n"
        "         if not isinstance(c.__dict__['__dataclass_fields__'], _Later)]\n"
        "print(len(log.requests), asked)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(session)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["2", "[]"]


@pytest.mark.parametrize("cls", [SharedHistory, Step], ids=lambda c: c.__name__)
def test_a_plain_dataclass_without_equality_is_the_dataclass_of_its_fields(cls: type) -> None:
    """Classes made with ``eq=False`` (a mapping's equality kept; a step compared by
    identity) have the constructor, fields and parameters of ``@dataclass(slots=True,
    eq=False)`` over the same fields, and keep the equality and hash they had."""
    specs = []
    for f in dataclasses.fields(cls):
        options: dict[str, Any] = {"init": f.init, "repr": f.repr, "kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        specs.append((f.name, f.type, dataclasses.field(**options)))
    twin: Any = dataclasses.make_dataclass(
        cls.__name__, specs, bases=cls.__bases__, slots=True, eq=False
    )
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)  # type: ignore[attr-defined]
    assert _parameters(cls) == _parameters(twin)
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert cls.__slots__ == twin.__slots__  # type: ignore[attr-defined]
    assert cls.__eq__ is twin.__eq__ and cls.__hash__ is twin.__hash__
