"""The Claude Code record tree, on small hand-built session files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.errors import UsageError
from ipse.transcript import Text, ToolCall, ToolResult, load
from ipse.transcript._formats.claude_code import read_session
from ipse.transcript._formats.claude_code_tree import SessionRecord, live_path
from ipse.transcript._model import Origin
from tests.conftest import CLAUDE_CODE, EXAMPLE_SESSION, needs_shared, shared_glob


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "message": {"role": "user", "content": content},
        **extra,
    }


def _assistant(
    uuid: str, parent: str | None, mid: str, block: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "message": {
            "id": mid,
            "role": "assistant",
            "model": "claude-test",
            "content": [block],
            "usage": {"input_tokens": 1},
        },
        **extra,
    }


def _use(call_id: str, name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {}}


def _texts(messages) -> list[str]:
    return [b.text for m in messages for b in m.blocks if isinstance(b, Text)]


def test_rewind_leaves_an_abandoned_branch(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "first question"),
            _assistant("a1", "u1", "m1", {"type": "text", "text": "first answer"}),
            _user("u2", "a1", "a question I took back"),
            _assistant("a2", "u2", "m2", {"type": "text", "text": "abandoned answer"}),
            _user("u3", "a1", "the edited question"),
            _assistant("a3", "u3", "m3", {"type": "text", "text": "final answer"}),
        ],
    )
    conversation = load(path).current()
    assert _texts(conversation.messages) == [
        "first question",
        "first answer",
        "the edited question",
        "final answer",
    ]


def test_records_sharing_message_id_merge_and_parallel_results_join(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "look at two files"),
            _assistant("a1", "u1", "m1", {"type": "text", "text": "Reading both."}),
            _assistant(
                "a2",
                "a1",
                "m1",
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}},
            ),
            _assistant(
                "a3",
                "a2",
                "m1",
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "b"}},
            ),
            # each result hangs off its own call's record: the first is a sibling of a3
            _user("r1", "a2", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
            _user("r2", "a3", [{"type": "tool_result", "tool_use_id": "t2", "content": "B"}]),
            {"type": "progress", "uuid": "p1", "parentUuid": "r2", "sessionId": "s1"},
            _assistant("a4", "p1", "m2", {"type": "text", "text": "Both read."}),
        ],
    )
    messages = load(path).current().messages
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [b.kind for b in messages[1].blocks] == ["text", "tool_call", "tool_call"]
    assert [b.call_id for b in messages[2].blocks if isinstance(b, ToolResult)] == ["t1", "t2"]
    assert messages[1].meta["uuids"] == ["a1", "a2", "a3"]


def test_compaction_boundary_with_logical_parent_in_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "old work"),
            _assistant("a1", "u1", "m1", _use("t1", "Bash")),
            _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b1",
                "parentUuid": None,
                "logicalParentUuid": "r1",
                "sessionId": "s1",
                "compactMetadata": {"trigger": "auto"},
            },
            _user(
                "s1",
                "b1",
                "This session is being continued from a previous conversation.",
                isCompactSummary=True,
            ),
            _assistant("a2", "s1", "m2", {"type": "text", "text": "continuing"}),
        ],
    )
    thread = load(path).thread
    assert thread is not None
    assert thread.compactions == 1
    assert [len(s.conversation.messages) for s in thread.segments] == [3, 2]
    last = thread.conversation
    summary = last.messages[0].blocks[0]
    assert isinstance(summary, Text) and summary.origin is Origin.HARNESS
    assert sum(1 for m in thread.all_messages() for b in m.blocks if isinstance(b, ToolCall)) == 1


def test_is_meta_text_is_harness(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "expanded command text", isMeta=True),
            _user("u2", "u1", "<system-reminder>be brief</system-reminder>"),
            _user("u3", "u2", "my actual words"),
        ],
    )
    origins = [
        b.origin for m in load(path).current().messages for b in m.blocks if isinstance(b, Text)
    ]
    assert origins == [Origin.HARNESS, Origin.HARNESS, Origin.HUMAN]


def _mid_exchange(path: Path) -> Path:
    """A session cut mid-exchange: it starts with results whose calls are not in the file."""
    return _write(
        path,
        [
            _user("r0", None, [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}]),
            _user("r1", "r0", [{"type": "tool_result", "tool_use_id": "gone2", "content": "y"}]),
            _assistant("a1", "r1", "m1", {"type": "text", "text": "as I was saying"}),
            _user("u1", "a1", "go on"),
            _assistant("a2", "u1", "m2", _use("t1", "ls")),
            _user("r2", "a2", [{"type": "tool_result", "tool_use_id": "t1", "content": "z"}]),
            _assistant("a3", "r2", "m3", {"type": "text", "text": "done"}),
        ],
    )


def test_a_session_starting_mid_exchange_is_read_with_one_warning(tmp_path: Path) -> None:
    source = load(_mid_exchange(tmp_path / "s.jsonl"))
    assert len(source.current().messages) == 6
    notes = [w for w in source.warnings if "not in the file" in w]
    assert len(notes) == 1 and "2 tool result(s)" in notes[0] and "line 1" in notes[0]


def test_handoff_removes_and_archives_orphan_results(tmp_path: Path, cli: Any) -> None:
    path = _mid_exchange(tmp_path / "s.jsonl")
    out = tmp_path / "out.json"
    result = cli("handoff", str(path), "--at", "end", "-o", str(out), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["archived"] == 3  # two orphans and one call with its result
    body = json.loads(out.read_bytes())
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert not [b for b in blocks if b.get("type") in ("tool_result", "tool_use")]
    listed = cli("archive", "list", "session:s1", "--json").stdout
    assert "gone" in listed and "gone2" in listed


def test_a_rewound_branch_repeating_a_response_id_stays_out(tmp_path: Path, cli: Any) -> None:
    call = _use("t1", "ls")
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "list files"),
            _assistant("a1", "u1", "m1", {"type": "text", "text": "listing"}),
            _assistant("a2", "a1", "m1", call),
            _user("r1", "a2", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
            _assistant("a3", "r1", "m2", _use("t2", "rm")),
            _user("r2", "a3", [{"type": "tool_result", "tool_use_id": "t2", "content": "gone"}]),
            # rewound to a1: the same response's call again, then a new path
            _assistant("a2b", "a1", "m1", call),
            _user("r1b", "a2b", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
            _assistant("a4", "r1b", "m3", {"type": "text", "text": "here they are"}),
        ],
    )
    messages = load(path).current().messages
    ids = [b.id for m in messages for b in m.blocks if isinstance(b, ToolCall)]
    assert ids == ["t1"]
    assert [b.call_id for m in messages for b in m.blocks if isinstance(b, ToolResult)] == ["t1"]
    report = json.loads(cli("inspect", str(path), "--json").stdout)
    assert report["tool_calls"] == 1
    result = cli("handoff", str(path), "--at", "end", "-o", str(tmp_path / "o.json"))
    assert result.returncode == 0, result.stderr


def test_parallel_calls_off_the_path_still_join(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "two things"),
            _assistant("a1", "u1", "m1", _use("p1", "a")),
            _assistant("a2", "a1", "m1", _use("p2", "b")),
            _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "p1", "content": "1"}]),
            _user("r2", "a2", [{"type": "tool_result", "tool_use_id": "p2", "content": "2"}]),
            _assistant("a3", "r2", "m2", {"type": "text", "text": "both done"}),
        ],
    )
    messages = load(path).current().messages
    assert [b.id for m in messages for b in m.blocks if isinstance(b, ToolCall)] == ["p1", "p2"]
    assert sorted(b.call_id for m in messages for b in m.blocks if isinstance(b, ToolResult)) == [
        "p1",
        "p2",
    ]


def test_unknown_thread_names_the_threads(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [_user("u1", None, "hi")])
    with pytest.raises(UsageError, match="threads: main"):
        load(path, thread="sidechain-9")


def _answers(session: Any) -> Any:
    """What readers ask of a session's records: its id, summaries, threads (messages, meta,
    what was skipped), the journal, and the version a handoff writes."""
    from ipse.transcript._formats.claude_code_journal import read_journal

    threads = []
    for name in session.thread_names():
        thread = session.thread(name)
        threads.append(
            (
                name,
                thread.skipped,
                [(segment.boundary, segment.conversation.messages) for segment in thread.segments],
            )
        )
    journal = read_journal(session.records)
    versions = [r.data.get("version") for r in session.records]
    return session.session_id, session.summaries, threads, journal, versions


def _unslimmed(path: Path) -> Any:
    from ipse.transcript._formats.claude_code import ClaudeCodeSession
    from ipse.transcript._formats.claude_code_tree import SessionRecord
    from ipse.transcript._jsonl import read_jsonl

    records = [
        SessionRecord(
            line,
            data,
            data.get("type"),
            data.get("uuid"),
            data.get("parentUuid"),
            bool(data.get("isSidechain")),
            data.get("message"),
        )
        for line, data in read_jsonl(path)
    ]
    return ClaudeCodeSession(path, records, read_session(path).subagent_files)


def _progress(uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "type": "progress",
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "data": {"type": "hook_progress", "message": {"role": "user", "content": "x" * 50}},
        "toolUseID": "toolu_1",
        "cwd": "/w",
        **extra,
    }


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(None, id="hand-built"),
        pytest.param(EXAMPLE_SESSION, id="example"),
        *(needs_shared(p, id=p.name) for p in shared_glob(CLAUDE_CODE, "*.jsonl")),
    ],
)
def test_what_reading_leaves_out_is_what_no_reader_asks_for(
    path: Path | None, tmp_path: Path
) -> None:
    """`read_session` keeps only part of a progress record and drops ``toolUseResult``:
    every answer a reader gives is the one it gives on the records as written (where the
    progress records alone say the session's id and version, in the hand-built one)."""
    if path is None:
        path = _write(
            tmp_path / "s.jsonl",
            [
                _progress("p0", None, sessionId="from-progress", version="2.1.1"),
                {**_user("u1", "p0", "hi"), "toolUseResult": {"stdout": "x"}},
                _progress("p1", "u1", subtype="odd"),
                _assistant("a1", "p1", "m1", {"type": "text", "text": "hello"}),
                _progress("p2", "a1", version="2.1.2", timestamp="2026-01-01T00:00:00Z"),
            ],
        )
    slimmed = read_session(path)
    assert _answers(slimmed) == _answers(_unslimmed(path))
    progress = [r.data for r in slimmed.records if r.kind == "progress"]
    assert all("data" not in p and "cwd" not in p for p in progress)


def _reference_live_path(records: list[SessionRecord]) -> list[SessionRecord]:
    """The live path as its definition reads: from the last record with a string uuid, each
    record's parent by the place of the last record with that uuid (no compaction here)."""
    place = {r.uuid: i for i, r in enumerate(records) if isinstance(r.uuid, str)}
    starts = [i for i, r in enumerate(records) if isinstance(r.uuid, str)]
    path: list[SessionRecord] = []
    at = starts[-1] if starts else None
    while at is not None and records[at] not in path:
        path.append(records[at])
        parent = records[at].parent
        at = place.get(parent) if isinstance(parent, str) else None
    return path[::-1]


_KINDS = ["user", "assistant", "progress"]
_ids = st.sampled_from(["a", "b", "c", "d"]) | st.none() | st.integers(0, 2) | st.booleans()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_ids | st.just(["a"]), _ids | st.just({"a": 1}), st.sampled_from(_KINDS)),
        max_size=10,
    )
)
def test_the_live_path_follows_string_ids_only(links: list[tuple[Any, Any, str]]) -> None:
    """Ids that are not strings (numbers, booleans, lists, objects) link to nothing, and a
    record whose id repeats one before it stands for that id from then on."""
    records = [
        SessionRecord(n, {"type": kind}, kind, uuid, parent, False, None)
        for n, (uuid, parent, kind) in enumerate(links, start=1)
    ]
    assert live_path(records) == _reference_live_path(records)


def _reaches(records: list[SessionRecord], root: str) -> list[SessionRecord] | None:
    """The records whose ancestry reaches ``root``, walked record by record as the definition
    says; None when a loop of parents makes the walk endless."""
    parent_of = {r.uuid if isinstance(r.uuid, str) else None: r.parent for r in records}
    found = []
    for record in records:
        current = record.uuid if isinstance(record.uuid, str) else None
        steps = 0
        while current is not None and current != root and current in parent_of:
            parent = parent_of[current]
            current = parent if isinstance(parent, str) else None
            steps += 1
            if steps > len(records):
                return None
        if current == root:
            found.append(record)
    return found


_SIDE_IDS = st.sampled_from(["a", "b", "c", "d", "e"]) | st.none() | st.integers(0, 1)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_SIDE_IDS, _SIDE_IDS), max_size=12))
def test_each_sidechain_holds_the_records_whose_ancestry_reaches_its_root(
    links: list[tuple[Any, Any]],
) -> None:
    """One pass over the sidechain records groups them by root exactly as walking each
    record's ancestry for each root would (repeated ids, ids that are not strings, dangling
    parents); a loop of parents ends the walk instead of hanging it."""
    from ipse.transcript._formats.claude_code import ClaudeCodeSession

    records = [
        SessionRecord(n, {"type": "user"}, "user", uuid, parent, True, None)
        for n, (uuid, parent) in enumerate(links, start=1)
    ]
    session = ClaudeCodeSession(Path("s.jsonl"), records)
    groups = session._sidechains()
    for root in session._sidechain_roots():
        expected = _reaches(records, root)
        if expected is not None:
            assert groups[root] == expected


def test_a_loop_of_parents_among_sidechain_records_ends_every_reading(tmp_path: Path) -> None:
    """Two sidechain records naming each other as parent (valid JSON, an impossible tree):
    ``prefix`` and ``inspect --thread sidechain-1`` answer (they used to loop forever)."""
    import subprocess
    import sys

    side = {"isSidechain": True}
    path = _write(
        tmp_path / "loop.jsonl",
        [
            _user("u1", None, "hello"),
            _assistant("a1", "u1", "m1", {"type": "text", "text": "hi"}),
            _user("s1", None, "side task", **side),
            _assistant("s2", "s1", "m2", {"type": "text", "text": "done"}, **side),
            _user("c1", "c2", "loop a", **side),
            _assistant("c2", "c1", "m3", {"type": "text", "text": "loop b"}, **side),
        ],
    )
    for command in (["prefix", str(path)], ["inspect", str(path), "--thread", "sidechain-1"]):
        done = subprocess.run(
            [sys.executable, "-m", "ipse", *command], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    messages = load(path, thread="sidechain-1").current().messages
    assert [m.role for m in messages] == ["user", "assistant"]
