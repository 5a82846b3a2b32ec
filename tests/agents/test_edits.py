"""Format-preserving edits: adding then removing ipse's entries gives back the file's exact bytes,
for JSON and TOML files written in many styles."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.agents import _jsonedit as jsonedit
from ipse.agents import _tomledit as tomledit
from ipse.errors import InputError
from tests.support.strategies import json_values

KEYS = st.text(st.characters(codec="utf-8"), max_size=8)
SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
VALUES = json_values(SCALARS, KEYS, size=3, leaves=8)
STYLES = st.sampled_from(
    [
        {"indent": 2},
        {"indent": 4},
        {"indent": "\t"},
        {"indent": None},
        {"indent": None, "separators": (",", ":")},
        {"indent": 2, "ensure_ascii": False},
    ]
)
ENTRY = {"type": "stdio", "command": "/opt/my venv/bin/ipse", "args": ["mcp"], "env": {}}
HOOK = {"hooks": [{"type": "command", "command": "'/opt/my venv/bin/ipse' proxy start"}]}


def _dump(value: dict[str, Any], style: dict[str, Any], newline: bool) -> str:
    return json.dumps(value, **style) + ("\n" if newline else "")


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(KEYS.filter(lambda k: k not in ("mcpServers", "env")), VALUES, max_size=5),
    st.dictionaries(KEYS.filter(lambda k: k != "ipse"), VALUES, max_size=3) | st.none(),
    STYLES,
    st.booleans(),
)
def test_adding_then_removing_a_member_gives_the_same_bytes(
    base: dict[str, Any], servers: dict[str, Any] | None, style: dict[str, Any], newline: bool
) -> None:
    document = dict(base)
    if servers is not None:
        document["mcpServers"] = servers
    text = _dump(document, style, newline)
    added, created = jsonedit.set_member(text, ["mcpServers"], "ipse", ENTRY)
    value = json.loads(added)
    assert value["mcpServers"]["ipse"] == ENTRY
    assert {k: v for k, v in value.items() if k != "mcpServers"} == base
    assert created == ([] if servers is not None else ["mcpServers"])
    assert added.endswith("\n") == newline
    again, _ = jsonedit.set_member(added, ["mcpServers"], "ipse", ENTRY)
    assert again == added  # idempotent
    assert jsonedit.remove_member(added, ["mcpServers"], "ipse", created) == text


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(KEYS.filter(lambda k: k != "hooks"), VALUES, max_size=4),
    st.lists(st.dictionaries(KEYS, SCALARS, max_size=2), max_size=3) | st.none(),
    STYLES,
    st.booleans(),
)
def test_adding_then_removing_an_item_gives_the_same_bytes(
    base: dict[str, Any], starts: list[Any] | None, style: dict[str, Any], newline: bool
) -> None:
    document = dict(base)
    if starts is not None:
        document["hooks"] = {"SessionStart": starts}
    text = _dump(document, style, newline)
    added, created = jsonedit.append_item(text, ["hooks", "SessionStart"], HOOK)
    assert json.loads(added)["hooks"]["SessionStart"][-1] == HOOK
    removed = jsonedit.remove_items(added, ["hooks", "SessionStart"], HOOK)
    assert jsonedit.prune(removed, ["hooks", "SessionStart"], created) == text


def test_an_edit_keeps_the_files_own_indentation() -> None:
    text = '{\n\t"model": "opus",\n\t"env": {\n\t\t"A": "1"\n\t}\n}\n'
    added, _ = jsonedit.set_member(text, ["env"], "B", "2")
    assert added == '{\n\t"model": "opus",\n\t"env": {\n\t\t"A": "1",\n\t\t"B": "2"\n\t}\n}\n'


@pytest.mark.parametrize("text", ["[]", "not json", '{"a": 1} trailing', '"x"'])
def test_what_is_not_a_json_object_is_refused(text: str) -> None:
    with pytest.raises(InputError):
        jsonedit.set_member(text, ["mcpServers"], "ipse", ENTRY)


def test_a_container_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InputError, match="`mcpServers` is not an object"):
        jsonedit.set_member('{"mcpServers": []}', ["mcpServers"], "ipse", ENTRY)


TOML_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda k: k not in ("model_provider", "mcp_servers", "model_providers")
)
TOML_SCALARS = st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(TOML_KEYS, TOML_SCALARS, max_size=3),
    st.dictionaries(TOML_KEYS, st.dictionaries(TOML_KEYS, TOML_SCALARS, max_size=2), max_size=2),
    st.sampled_from(["", "# my codex config\n", "\n"]),
    st.sampled_from(["", "\n", "\n\n"]),
    st.booleans(),
)
def test_toml_block_and_key_roundtrip(
    top: dict[str, Any], tables: dict[str, Any], head: str, tail: str, other_server: bool
) -> None:
    import tomlkit

    document = tomlkit.document()
    for key, value in top.items():
        document[key] = value
    for name, table in tables.items():
        if name not in top:
            document[name] = table
    if other_server:
        document["mcp_servers"] = {"other": {"command": "x"}}
    text = (head + tomlkit.dumps(document)).rstrip("\n") + tail if top or tables else head + tail
    tomledit.parse_toml(text)
    body = '[mcp_servers.ipse]\ncommand = "/opt/my venv/bin/ipse"\nargs = ["mcp"]\n'
    key = 'model_provider = "ipse"'

    def add(text: str) -> str:  # as install does it: from the file without ipse's lines
        clean = tomledit.remove_toml_block(tomledit.remove_top_key(text, key))
        return tomledit.add_top_key(tomledit.add_toml_block(clean, body), key)

    added = add(text)
    parsed = tomledit.parse_toml(added)
    assert parsed["model_provider"] == "ipse"
    assert parsed["mcp_servers"]["ipse"]["args"] == ["mcp"]
    assert {k: parsed[k] for k in top} == top
    assert add(added) == added
    back = tomledit.remove_toml_block(tomledit.remove_top_key(added, key))
    assert back == text
