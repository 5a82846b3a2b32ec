"""The Claude Code record tree, on small hand-built session files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipse.errors import InvalidConversation, UsageError
from ipse.transcript import Origin, Text, ToolCall, ToolResult, load


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
            _assistant(
                "a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}
            ),
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


def test_orphan_tool_result_is_bad_input(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _user("u1", None, "hi"),
            _user("r1", "u1", [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]),
        ],
    )
    with pytest.raises(InvalidConversation) as info:
        load(path)
    assert info.value.exit_code == 2
    assert "line 2" in str(info.value) and str(path) in str(info.value)


def test_unknown_thread_names_the_threads(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [_user("u1", None, "hi")])
    with pytest.raises(UsageError, match="threads: main"):
        load(path, thread="sidechain-9")
