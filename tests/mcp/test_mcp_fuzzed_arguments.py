"""Generated arguments for every MCP tool: whatever a model sends, a tool answers or refuses
with one `IpseError` (a tool error the model can read), never another exception (which the
server would report as an internal error).

Arguments follow each tool's schema most of the time (so calls get past the argument check
and reach the state folder, the archive and the twin store), with lone surrogates, NUL, markup,
escape sequences, long text and out-of-range numbers among the strings and integers, and now
and then a value of any kind. This found the lone surrogates that reached ``state next`` and
the twin transitions through a tool call; the examples are derandomized so that a run is
repeatable.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse.errors import IpseError
from ipse.mcp._server import call
from ipse.mcp._tools import Settings, tools
from ipse.statedir import init

TABLE = {tool.name: tool for tool in tools()}

LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=True),
    st.text(max_size=8),
)
ANY: st.SearchStrategy[Any] = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["text", "approach", "why", "claim", "id"]), inner),
    ),
    max_leaves=6,
)
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "\ud800",
            "a\x00b",
            "../../etc/passwd",
            "[/]",
            "\x1b]0;title\x07\x1b[2J",
            "x" * 3000,
            "",
            " ",
            "2026-01-01T00:00:00Z",
            "not a time",
            "toolu_1",
        ]
    ),
)


def conforming(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the schema's type (with hostile strings and numbers among them)."""
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "string":
        return TEXT
    if kind == "integer":
        return st.integers(-3, 10**19)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(conforming(schema.get("items", {})), max_size=4)
    if kind == "object":
        properties = schema.get("properties") or {}
        return st.fixed_dictionaries({k: conforming(v) for k, v in properties.items()})
    return ANY


@pytest.fixture
def configured(tmp_path: Path) -> Settings:
    """One state folder, archive and twin store for all the examples (within this test's
    own IPSE_HOME)."""
    folder = tmp_path
    init(folder / "state", "keep the tools answering")
    return Settings(
        session="s-fuzz",
        state_dir=folder / "state",
        cwd=folder,
        archive_url=f"sqlite:///{folder / 'archive.db'}",
        store_url=f"sqlite:///{folder / 'twins.db'}",
        twin="ada",
    )


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_every_tool_answers_or_refuses_in_one_error(
    configured: Settings, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(TABLE)))
    schema = TABLE[name].schema
    arguments: dict[str, Any] = {}
    for key, sub in (schema.get("properties") or {}).items():
        if key not in schema.get("required", []) and data.draw(st.booleans()):
            continue
        arguments[key] = data.draw(conforming(sub) if data.draw(st.integers(0, 5)) else ANY)
    with contextlib.suppress(IpseError):  # a refusal in one line is an answer
        call(TABLE, configured, name, arguments)
