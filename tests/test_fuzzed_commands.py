"""Generated hostile input through the commands that keep state: ``twin apply`` (transition
files of any shape, lone surrogates, bytes that are not UTF-8), the ``state`` commands and
``recall`` / ``archive list`` (arguments with markup, escape sequences, shell syntax, bytes the
OS hands over as surrogates). Whatever comes in, the answer is a result or one line (exit 0, 1
or 2), never an internal error (exit 3), and ``state verify`` still reads the folder.

Arguments hold what a real command line can: no NUL (argv strings are C strings) and only the
surrogates that stand for undecodable bytes (``\\udc80``-``\\udcff``). Derandomized, so that a run
is repeatable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse.twin._transitions import OPS as TRANSITION_OPS
from tests.conftest import CliResult, run_cli
from tests.test_fuzzed_inputs import SETTINGS

ARGUMENT = st.one_of(
    st.text(max_size=10).filter(lambda t: "\x00" not in t),
    st.sampled_from(
        ["\udcff", "[/]", "[bold]x", "\x1b[2J\x1b]0;t\x07", "-", "--json", "x" * 2000, "../..", ""]
    ),
    st.sampled_from([" ", "$(id)", "'\"`", "a\nb"]),
)
FIELDS = ["op", "text", "fact", "loop", "account", "pinned", "expires_at", "active"]
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=False),
    ARGUMENT,
    st.just("\ud800"),  # in a file, a JSON escape can hold any surrogate
)
VALUE: st.SearchStrategy[Any] = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=8,
)
OPS = st.sampled_from([*TRANSITION_OPS, "no_such_op"])
TRANSITION = st.one_of(
    VALUE,
    st.builds(
        lambda op, rest: {"op": op, **rest},
        OPS,
        st.dictionaries(st.sampled_from(FIELDS[1:]), LEAF, max_size=3),
    ),
)


def answered(done: CliResult, what: Any) -> None:
    assert done.returncode in (0, 1, 2), (what, done.returncode, done.stderr[-2000:])
    assert "internal error" not in done.stderr, (what, done.stderr)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzzed-commands")


@SETTINGS
@given(lines=st.lists(TRANSITION, max_size=5), tail=st.sampled_from([b"", b"\xff", b"\n\n"]))
def test_twin_apply_of_any_transitions(scratch: Path, lines: list[Any], tail: bytes) -> None:
    path = scratch / "turn.jsonl"
    text = "\n".join(json.dumps(line) for line in lines)
    path.write_bytes(text.encode("utf-8", "surrogatepass") + tail)  # ASCII JSON, then the tail
    env = {"IPSE_HOME": str(scratch / "home")}
    store = ["--store", f"sqlite:///{scratch / 'twins.db'}"]
    answered(run_cli("twin", "apply", "ada", str(path), *store, "--json", env=env), lines)
    for command in ("show", "rehydrate", "export", "history"):
        answered(run_cli("twin", command, "ada", *store, env=env), command)


@SETTINGS
@given(
    command=st.sampled_from(["next", "checkpoint", "invariant", "stamp", "resume", "rotate"]),
    values=st.lists(ARGUMENT, min_size=2, max_size=2),
)
def test_state_commands_with_any_arguments(scratch: Path, command: str, values: list[str]) -> None:
    env = {"IPSE_HOME": str(scratch / "home")}
    folder = ["--dir", str(scratch / "state")]
    if not (scratch / "state").exists():
        answered(run_cli("state", "init", "--goal", "g", *folder, env=env), "init")
    arguments = {
        "next": [values[0]],
        "checkpoint": [values[0]],
        "invariant": [values[0], "--reason", values[1]],
        "stamp": [values[0], "--artifact", values[1]],
        "resume": ["--budget", "50"] if values[0] else [],
        "rotate": [],
    }[command]
    answered(run_cli("state", command, *arguments, *folder, env=env), (command, values))
    answered(run_cli("state", "verify", *folder, env=env), "verify")


@SETTINGS
@given(item=ARGUMENT, session=st.one_of(st.none(), ARGUMENT))
def test_recall_and_archive_list_with_any_ids(
    scratch: Path, item: str, session: str | None
) -> None:
    env = {"IPSE_HOME": str(scratch / "home")}
    extra = ["--session", session] if session is not None else []
    answered(run_cli("recall", item, *extra, env=env), (item, session))
    answered(run_cli("archive", "list", *extra, env=env), session)
