"""Writing a Claude Code session: folder names, the record chain, and reading it back."""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse.transcript import load
from ipse.transcript._formats.claude_code_session import (
    _base36,
    _string_hash,
    project_folder,
    session_records,
    write_session,
)

BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [
        {"role": "user", "content": "What is the code word?"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is *marmalade*."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks [/] \u00e9"}]},
        {"role": "assistant", "content": "You are welcome."},
    ],
}


def test_folder_names_replace_every_non_alphanumeric_character() -> None:
    assert project_folder("/tmp/x/proj dir/my.app_x") == "-tmp-x-proj-dir-my-app-x"
    assert project_folder("/home/zoë/src") == "-home-zo--src"


def test_the_string_hash_is_the_31_multiplier_hash_of_utf16_units() -> None:
    assert _string_hash("hello") == 99162322  # the same algorithm as Java's String.hashCode
    assert _string_hash("polygenelubricants") == -(2**31)  # wraps to a signed 32-bit value
    assert _string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # a surrogate pair: two units


@given(st.text(min_size=201, max_size=400))
def test_long_folder_names_are_cut_and_hashed(cwd: str) -> None:
    name = project_folder(cwd)
    flat = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(flat) <= 200:
        assert name == flat
        return
    assert name[:200] == flat[:200] and name[200] == "-"
    assert name[201:] == _base36(abs(_string_hash(cwd)))


def test_records_chain_from_a_null_root_with_increasing_times() -> None:
    sid = str(uuid.uuid4())
    records = session_records(BODY["messages"], session_id=sid, cwd="/p", model="m")
    assert records[0]["parentUuid"] is None
    for before, after in itertools.pairwise(records):
        assert after["parentUuid"] == before["uuid"]
        assert after["timestamp"] > before["timestamp"]
    for record in records:
        assert {"type", "message", "uuid", "parentUuid", "timestamp", "sessionId", "cwd"} <= set(
            record
        )
        assert record["sessionId"] == sid
    assistant = records[1]["message"]
    assert assistant["type"] == "message" and assistant["model"] == "m"
    assert assistant["stop_reason"] == "end_turn" and "usage" in assistant
    assert records[3]["message"]["content"] == [{"type": "text", "text": "You are welcome."}]


def test_written_session_reads_back_as_the_same_messages(tmp_path: Path) -> None:
    sid, path = write_session(BODY, cwd="/work/proj", root=tmp_path)
    assert path == tmp_path / "projects" / "-work-proj" / f"{sid}.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    conversation = load(path).current()
    texts = [b.text for m in conversation.messages for b in m.blocks if hasattr(b, "text")]
    assert texts == [
        "What is the code word?",
        "It is *marmalade*.",
        "Thanks [/] \u00e9",
        "You are welcome.",
    ]
    lines = path.read_bytes().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["user", "assistant", "user", "assistant"]


def test_an_existing_session_is_never_overwritten(tmp_path: Path) -> None:
    sid, path = write_session(BODY, cwd="/p", root=tmp_path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_session(BODY, cwd="/p", root=tmp_path, session_id=sid)
    assert path.read_bytes() == before
