"""Value classes are plain ``@dataclass``es: the fields they declare are their constructor,
repr, equality and hash, and no class writes those methods itself beside its fields (the
SessionStart hook's few classes are `ipse._plain.Plain`s instead: tests/test_entry.py). Where
the model compares more than the default, it says so in its fields: `Other` and `ToolDef`
compare their provider dicts and hash by type and name."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import pytest

from ipse.transcript import Conversation, Message, Other, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._model import Origin, ToolDef
from ipse.transcript._stats import TokenTally

SRC = Path(__file__).resolve().parents[1] / "src"
_MADE_BY_DATACLASS = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"}


def _dataclasses_that_write_their_methods() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or not any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list
            ):
                continue
            own = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name in _MADE_BY_DATACLASS
            ]
            if own:
                found.append(f"{path.relative_to(SRC)}: {node.name} writes {', '.join(own)}")
    return found


def test_no_dataclass_writes_the_methods_its_fields_make() -> None:
    assert _dataclasses_that_write_their_methods() == [], (
        "declare the fields and let @dataclass make the constructor, repr, equality and "
        "hash (a field's compare/hash/repr options say what differs)"
    )


@pytest.mark.parametrize(
    "cls", [Text, ToolCall, ToolResult, Thinking, Other, Message, ToolDef, Conversation]
)
def test_the_model_is_frozen_slotted_dataclasses(cls: type) -> None:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and params.eq and "__slots__" in cls.__dict__
    assert cls.__dict__["__init__"].__code__.co_filename == "<string>"  # made by @dataclass


def test_blocks_and_messages_compare_by_what_was_said_not_by_their_dicts() -> None:
    text = Text("hi", Origin.AGENT, raw={"type": "text", "text": "hi"})
    assert text == Text("hi", Origin.AGENT) and hash(text) == hash(Text("hi", Origin.AGENT))
    assert text != Text("hi", Origin.HUMAN)
    assert repr(text) == "Text(text='hi', origin=<Origin.AGENT: 'agent'>)"
    message = Message("user", (text,), meta={"uuid": "u1"})
    assert message == Message("user", (Text("hi", Origin.AGENT),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        text.text = "changed"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(message)) == message


def test_other_blocks_and_tool_definitions_compare_their_dicts() -> None:
    image = Other("image", {"type": "image", "source": "a"})
    assert image == Other("image", {"type": "image", "source": "a"})
    assert image != Other("image", {"type": "image", "source": "b"})
    assert hash(image) == hash(Other("image", {"type": "image", "source": "b"}))
    tool = ToolDef("read", {"name": "read", "input_schema": {"type": "object"}})
    assert tool != ToolDef("read", {"name": "read"})
    assert hash(tool) == hash(ToolDef("read", {"name": "read"}))
    assert ToolDef("read").raw == {} and repr(tool) == "ToolDef(name='read')"


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
