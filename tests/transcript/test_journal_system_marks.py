"""A journaled request's system prompt carries its own breakpoints, wherever they move from
one request to the next; requests that mark it alike share one list (it is placed once)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.transcript._formats.claude_code_journal import message_hash, read_journal
from ipse.transcript._jsonl import JsonlRecord

_SYSTEM = [{"type": "text", "text": "You are an agent."}, {"type": "text", "text": "Be brief."}]
_USER = {"role": "user", "content": [{"type": "text", "text": "hello"}]}


def _requests(system_marks: list[list[Any]], shapes: list[str] | None = None) -> list[Any]:
    """A session journaling one request per entry of ``system_marks`` (the system paths it
    marks), each under the shape named in ``shapes`` (default: all ``s``)."""
    records: list[dict[str, Any]] = [
        {"type": "api-request-shape", "shapeHash": "s", "shape": {"system": _SYSTEM}},
        {"type": "api-request-blob", "hash": message_hash(_USER), "message": _USER},
    ]
    for n, paths in enumerate(system_marks):
        shape = shapes[n] if shapes else "s"
        if shape != "s":  # a shape redefined under its hash: a prompt of its own
            system = [{"type": "text", "text": f"Prompt {n}."}, *_SYSTEM[1:]]
            records.append(
                {"type": "api-request-shape", "shapeHash": shape, "shape": {"system": system}}
            )
        records.append(
            {
                "type": "api-request",
                "id": f"r{n}",
                "shapeHash": shape,
                "params": {"model": "claude-test"},
                "keep": 0,
                "tail": [message_hash(_USER)],
                "cacheControl": [
                    {"path": path, "value": {"type": "ephemeral", "n": n % 2}} for path in paths
                ],
            }
        )
    journal = read_journal([JsonlRecord(i, r) for i, r in enumerate(records, start=1)])
    return [journal[f"r{n}"].system for n in range(len(system_marks))]


def _expected(paths: list[Any], n: int, base: list[Any] = _SYSTEM) -> list[Any]:
    out = [dict(b) for b in base]
    for path in paths:
        if len(path) == 2 and isinstance(path[1], int) and -len(out) <= path[1] < len(out):
            out[path[1]]["cache_control"] = {"type": "ephemeral", "n": n % 2}
    return out


def test_each_request_has_its_own_system_breakpoints() -> None:
    marks = [[["system", 1]], [["system", 0]], [["system", 1]], [["system", 0], ["system", 1]]]
    systems = _requests(marks)
    for n, (system, paths) in enumerate(zip(systems, marks, strict=True)):
        assert system == _expected(paths, n)
    assert systems[1] is not systems[3]  # other marks: other lists
    assert _SYSTEM[1].get("cache_control") is None  # the shape's own list is never marked


def test_requests_marking_alike_share_one_list() -> None:
    systems = _requests([[["system", 1]], [["system", 0]], [["system", 1]]])
    assert systems[0] is systems[2] and systems[0] != systems[1]


def test_another_shape_marked_alike_is_marked_as_its_own_prompt() -> None:
    systems = _requests([[["system", 0]]] * 4, ["s", "s", "t", "s"])  # r0 and r2: same marks
    assert systems[2][0]["text"] == "Prompt 2." and systems[2][0]["cache_control"]
    assert systems[0][0]["text"] == "You are an agent." and systems[0][0]["cache_control"]
    assert systems[1] is systems[3]  # the first shape again, marked alike


_PATH = st.one_of(
    st.tuples(st.just("system"), st.integers(-3, 3)).map(list),
    st.just(["system"]),
    st.just(["system", "x"]),
    st.just(["messages", 0, "content", 0]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_PATH, min_size=1, max_size=3), min_size=1, max_size=6))
def test_any_marks_place_what_they_name(marks: list[list[Any]]) -> None:
    systems = _requests(marks)
    for n, (system, paths) in enumerate(zip(systems, marks, strict=True)):
        if any(p[:1] == ["system"] for p in paths):
            assert system == _expected([p for p in paths if p[:1] == ["system"]], n)
        else:
            assert system == _SYSTEM
