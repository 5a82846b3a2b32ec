"""Generated hostile input through the commands that read conversations: whatever the shape, the
answer is a result or one line (exit 0, 1 or 2), never a crash (exit 3).

Three generators: request bodies of every dialect with a value of any kind in any field;
Claude Code session records of every kind with ids, messages and blocks of any kind; and the
generated harness files (`tests.transcript.harness_cases`) with a few fields replaced by values
of another kind. Each found real crashes when it was written (unhashable ``type`` values, ids
that were lists, lone surrogates in names, documents nested past what orjson writes); the
examples are derandomized so that a run is repeatable, and the same inputs guard those fixes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.transcript import harness_cases as cases

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**20),
    st.text(max_size=6),
    st.just("\ud800"),
    st.floats(allow_nan=False, allow_infinity=False),
)
ODD: st.SearchStrategy[Any] = st.one_of(
    SCALARS, st.just([]), st.just({}), st.just([1]), st.just({"type": None})
)
NAMES = st.sampled_from(["micro_handoff", "Bash"])
IDS = st.one_of(st.sampled_from(["t1", "t2"]), ODD)


def _blocks() -> st.SearchStrategy[Any]:
    kinds = st.one_of(
        st.sampled_from(
            [
                "text",
                "tool_use",
                "tool_result",
                "thinking",
                "image",
                "function_call",
                "function_call_output",
                "message",
                "reasoning",
                "input_text",
            ]
        ),
        ODD,
    )
    return st.one_of(
        st.fixed_dictionaries(
            {"type": kinds},
            optional={
                "text": ODD,
                "id": IDS,
                "call_id": IDS,
                "tool_use_id": IDS,
                "name": st.one_of(NAMES, ODD),
                "input": st.one_of(st.dictionaries(st.text(max_size=2), SCALARS, max_size=2), ODD),
                "content": st.one_of(st.text(max_size=4), st.lists(ODD, max_size=2), ODD),
                "arguments": ODD,
                "role": st.sampled_from(["user", "assistant", "system", "tool"]),
                "cache_control": st.one_of(st.just({"type": "ephemeral"}), ODD),
            },
        ),
        ODD,
    )


def _messages() -> st.SearchStrategy[Any]:
    calls = st.lists(
        st.fixed_dictionaries(
            {
                "id": IDS,
                "type": st.just("function"),
                "function": st.one_of(
                    st.fixed_dictionaries({"name": NAMES, "arguments": ODD}), ODD
                ),
            }
        ),
        max_size=2,
    )
    return st.one_of(
        st.fixed_dictionaries(
            {"role": st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), ODD)},
            optional={
                "content": st.one_of(st.text(max_size=5), st.lists(_blocks(), max_size=3), ODD),
                "tool_calls": st.one_of(calls, ODD),
                "tool_call_id": IDS,
            },
        ),
        ODD,
    )


BODIES = st.fixed_dictionaries(
    {},
    optional={
        "model": st.one_of(st.sampled_from(["claude-sonnet-4-5", "gpt-4o"]), ODD),
        "messages": st.one_of(st.lists(_messages(), max_size=6), ODD),
        "input": st.one_of(st.lists(_blocks(), max_size=6), ODD),
        "system": st.one_of(st.text(max_size=4), st.lists(_blocks(), max_size=2), ODD),
        "tools": st.one_of(st.lists(st.dictionaries(st.just("name"), ODD, max_size=1)), ODD),
        "cache_control": st.one_of(st.just({"type": "ephemeral"}), ODD),
    },
)

RECORDS = st.fixed_dictionaries(
    {
        "type": st.one_of(
            st.sampled_from(["user", "assistant", "progress", "system", "api-request"]), ODD
        )
    },
    optional={
        "uuid": st.one_of(st.sampled_from(["u1", "u2", "a1", "a2"]), ODD),
        "parentUuid": st.one_of(st.sampled_from(["u1", "u2", "a1", "a2"]), ODD),
        "isSidechain": ODD,
        "subtype": st.sampled_from(["compact_boundary", "informational"]),
        "logicalParentUuid": st.one_of(st.sampled_from(["u1", "a1"]), ODD),
        "timestamp": st.one_of(st.just("2026-01-01T00:00:01Z"), ODD),
        "message": st.one_of(
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "content": st.one_of(st.lists(_blocks(), max_size=3), ODD),
                },
                optional={
                    "id": IDS,
                    "model": ODD,
                    "usage": st.one_of(
                        st.dictionaries(
                            st.sampled_from(["input_tokens", "cache_read_input_tokens"]),
                            ODD,
                            max_size=2,
                        ),
                        ODD,
                    ),
                },
            ),
            ODD,
        ),
    },
)

HARNESS_FILES = {
    "cline": (cases.cline_history, "api_conversation_history.json"),
    "roo": (cases.roo_history, "api_conversation_history.json"),
    "swe-agent": (cases.swe_agent_traj, "repo__repo-1.traj"),
    "mini-swe-agent": (cases.mini_swe_agent_traj, "traj.json"),
    "openhands": (cases.openhands_events, "events.json"),
    "gemini-cli": (cases.gemini_session_jsonl, "session-1.jsonl"),
}


def _commands(path: Path, out: Path) -> list[list[str]]:
    return [
        ["inspect", str(path), "--json"],
        ["prefix", str(path), "--json"],
        ["handoff", str(path), "--at", "now", "-o", str(out)],
    ]


def _answers(path: Path, tmp: Path) -> None:
    for command in _commands(path, tmp / "out.json"):
        done = run_cli(*command, env={"IPSE_HOME": str(tmp / "home")})
        assert done.returncode in (0, 1, 2), (command, done.stderr, path.read_text()[:2000])
        assert "internal error" not in done.stderr, (command, done.stderr)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzzed")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))  # ASCII JSON: no surrogate is raw
    return path


@SETTINGS
@given(body=BODIES)
def test_request_bodies(scratch: Path, body: dict[str, Any]) -> None:
    _answers(_write(scratch, "body.json", json.dumps(body)), scratch)


@SETTINGS
@given(records=st.lists(RECORDS, min_size=1, max_size=6))
def test_claude_code_records(scratch: Path, records: list[dict[str, Any]]) -> None:
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    _answers(_write(scratch, "session.jsonl", text), scratch)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if at:
        yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


@SETTINGS
@given(
    name=st.sampled_from(sorted(HARNESS_FILES)),
    edits=st.lists(st.tuples(st.integers(0, 10**6), ODD), min_size=1, max_size=3),
)
def test_harness_files_with_fields_of_another_kind(
    scratch: Path, name: str, edits: list[tuple[int, Any]]
) -> None:
    make, file_name = HARNESS_FILES[name]
    document: Any = make()
    for choice, value in edits:
        places = list(_paths(document))
        if not places:
            break
        *parents, last = places[choice % len(places)]
        holder = document
        for key in parents:
            holder = holder[key]
        holder[last] = copy.deepcopy(value)
    if file_name.endswith(".jsonl"):
        text = "\n".join(json.dumps(r) for r in document) + "\n"
    else:
        text = json.dumps(document)
    path = _write(scratch, file_name, text)
    for command in _commands(path, scratch / "out.json"):
        if command[0] == "handoff":
            command += ["--model", "claude-sonnet-4-5"]
        done = run_cli(*command, env={"IPSE_HOME": str(scratch / "home")})
        assert done.returncode in (0, 1, 2), (name, command, done.stderr)
        assert "internal error" not in done.stderr, (name, command, done.stderr)
