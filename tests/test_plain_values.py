"""Classes written with `ipse._plain.Plain` and `Frozen` instead of ``@dataclass`` (on the start
of ``ipse prefix``) behave as the dataclass they replaced: the same constructor and defaults,
repr, equality, hash, frozenness and ``__match_args__``, checked against the dataclass made from
the same fields."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.prefix._rules import Prices, Rules
from ipse.transcript import ClaudeCodeSession, Format, Positions, TokenTally
from ipse.transcript._formats import Sniff

# class -> (frozen, fields as (name, default factory or None when required, compare, repr))
_NONE: Any = None
_SPECS: dict[type, tuple[bool, list[tuple[str, Any, bool, bool]]]] = {
    Rules: (True, [("provider", None, True, True), ("table", None, True, True),
                   ("_answers", dict, False, False)]),
    Prices: (True, [("table", None, True, True), ("defaults", None, True, True),
                    ("source", None, True, True), ("_answers", dict, False, False)]),
    Sniff: (True, [("where", None, True, True), ("rank", None, True, True),
                   ("test", None, True, True)]),
    Format: (True, [("name", None, True, True), ("shape", None, True, True),
                    ("read", None, True, True), ("sniffs", None, True, True),
                    ("read_only", lambda: _NONE, True, True),
                    ("unrecorded", lambda: _NONE, True, True)]),
    Positions: (True, [("tools", None, True, True), ("system", list, True, True),
                       ("system_messages", list, True, True), ("messages", list, True, True),
                       ("per_message", lambda: False, True, True),
                       ("system_source", lambda: _NONE, True, True)]),
    ClaudeCodeSession: (False, [("path", None, True, True), ("records", None, True, True),
                                ("subagent_files", dict, True, True),
                                ("warnings", list, True, True),
                                ("skip_bad_lines", lambda: False, True, True)]),
}  # fmt: skip


def _twin(cls: type) -> Any:
    """The dataclass ``cls`` was, made from its fields."""
    frozen, spec = _SPECS[cls]
    fields = [
        (name, Any, dataclasses.field(compare=compare, repr=shown))
        if factory is None
        else (name, Any, dataclasses.field(default_factory=factory, compare=compare, repr=shown))
        for name, factory, compare, shown in spec
    ]
    return dataclasses.make_dataclass(cls.__name__, fields, frozen=frozen)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as exc:
        return "error", type(exc)


_VALUES = st.one_of(
    st.none(), st.integers(), st.text(max_size=4), st.tuples(st.integers()), st.lists(st.integers())
)


@pytest.mark.parametrize("cls", list(_SPECS), ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_plain_class_behaves_as_its_dataclass(cls: type, data: st.DataObject) -> None:
    twin = _twin(cls)
    _, spec = _SPECS[cls]
    given_count = data.draw(st.integers(sum(f is None for _, f, _, _ in spec), len(spec)))
    first = data.draw(st.lists(_VALUES, min_size=given_count, max_size=given_count))
    second = data.draw(
        st.lists(_VALUES, min_size=given_count, max_size=given_count) | st.just(first)
    )
    mine, theirs = cls(*first), twin(*first)
    assert repr(mine) == repr(theirs)
    assert (mine == cls(*second)) == (theirs == twin(*second))
    assert _outcome(lambda: hash(mine)) == _outcome(lambda: hash(theirs))
    assert mine.__match_args__ == theirs.__match_args__
    name = spec[0][0]
    assert _outcome(lambda: setattr(mine, name, 1)) == _outcome(lambda: setattr(theirs, name, 1))


def test_a_token_tally_keeps_its_memo_out_of_the_repr_but_not_out_of_equality() -> None:
    class Counter:
        name = "chars"

        def count(self, text: str) -> int:
            return len(text)

    counter = Counter()
    tally = TokenTally(counter)
    assert repr(tally) == f"TokenTally(counter={counter!r}, by_kind={tally.by_kind!r})"
    assert tally == TokenTally(counter)
    tally.count("four")
    assert tally != TokenTally(counter)
