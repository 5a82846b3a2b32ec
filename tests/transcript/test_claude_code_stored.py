"""A session read with a digest keeps notes of its message records' blocks, not the blocks:
each block is digested once as its line is read; the request messages of its threads are
those of the session read whole (their content read back from the file when asked for), on
real sessions and on generated record trees, hostile ones included; a file changed since it
was read is an error, not another answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from ipse.errors import InputError
from ipse.transcript._formats.claude_code import read_session
from ipse.transcript._formats.claude_code_requests import request_thread
from ipse.transcript._formats.claude_code_stored import (
    StoredContent,
    StoredFile,
    StoredMessage,
    notes_of,
)
from ipse.transcript._formats.claude_code_tree import MESSAGE_TYPES
from tests.transcript.test_claude_code_requests import SESSIONS, _records, _through_neutral


def _digest(block: Any) -> bytes:
    return orjson.dumps(block)


def _answer(build: Any, path: Path, name: str = "main", **kwargs: Any) -> Any:
    session = read_session(path, **kwargs)
    try:
        answer: Any = build(session, name)
    except InputError as exc:
        answer = f"InputError: {exc}"
    return answer, session.warnings


@pytest.mark.parametrize("path", SESSIONS)
def test_real_sessions_give_the_messages_of_reading_them_whole(path: Path) -> None:
    for name in read_session(path).thread_names():
        whole = request_thread(read_session(path), name)
        session = read_session(path, digest=_digest)
        stored = request_thread(session, name)
        assert all(isinstance(m.body, StoredMessage) for s in stored.segments for m in s)
        assert stored == whole, name
        assert stored == _through_neutral(read_session(path), name)


@pytest.mark.parametrize("path", SESSIONS)
def test_each_block_is_digested_once_and_not_kept(path: Path) -> None:
    seen: list[Any] = []

    def digest(block: Any) -> bytes:
        seen.append(block)
        return _digest(block)

    stored = read_session(path, digest=digest)
    digested = len(seen)
    whole = read_session(path)
    notes: list[Any] = []
    for kept, read in zip(stored.records, whole.records, strict=True):
        if read.kind not in MESSAGE_TYPES or type(read.message) is not dict:
            continue
        content = kept.message["content"]
        assert isinstance(content, StoredContent) and content.kept is None
        assert content.notes == notes_of(read.message.get("content"), _digest)[1]
        assert content.content() == read.message.get("content")  # (read back)
        notes.extend(content.notes)
    assert digested == len(notes)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(_records())
def test_generated_trees_read_with_a_digest_give_what_the_neutral_model_writes(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    neutral = _answer(_through_neutral, path)
    assert _answer(request_thread, path, digest=_digest) == neutral


def _session(path: Path) -> Path:
    records: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user"}},
        {
            "type": "assistant",
            "uuid": "u2",
            "parentUuid": "u1",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        },
    ]
    records[0]["message"]["content"] = "hi"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.mark.parametrize(
    "change",
    [
        lambda data: data.replace(b"hello", b"howdy"),  # another answer, the same length
        lambda data: data.replace(b"hello", b"hello there"),
        lambda data: data[: len(data) // 2],
    ],
)
def test_a_file_changed_since_it_was_read_is_an_error(tmp_path: Path, change: Any) -> None:
    path = _session(tmp_path / "s.jsonl")
    thread = request_thread(read_session(path, digest=_digest))
    answer = thread.segments[-1][-1].body
    path.write_bytes(change(path.read_bytes()))
    with pytest.raises(InputError, match="changed while it was read"):
        answer["content"]


def test_a_message_s_content_is_read_back_once(tmp_path: Path, monkeypatch: Any) -> None:
    path = _session(tmp_path / "s.jsonl")
    thread = request_thread(read_session(path, digest=_digest))
    reads: list[int] = []
    original = StoredFile.content_at

    def counted(self: StoredFile, at: int, size: int, line: int) -> Any:
        reads.append(line)
        return original(self, at, size, line)

    monkeypatch.setattr(StoredFile, "content_at", counted)
    first, second = (m.body for m in thread.segments[-1])
    assert dict(first) == {"role": "user", "content": "hi"}
    assert second["content"] is second["content"] and second.get("role") == "assistant"
    assert reads == [1, 2]


def test_a_journaled_session_keeps_its_messages_from_its_first_journaled_request(
    tmp_path: Path,
) -> None:
    """A journal resolves its requests' messages from the session's own: from the first
    journaled request on they are kept as read, not read back one by one."""
    from tests.support.generated import Turn, journaled_records, write_jsonl

    path = tmp_path / "s.jsonl"
    write_jsonl(path, journaled_records([Turn(f"t{i}", blob=False) for i in range(4)]))
    records = read_session(path, digest=_digest).records
    first = next(r.line for r in records if str(r.kind).startswith("api-request"))
    stored = [
        (r.line, r.message["content"])
        for r in records
        if r.kind in MESSAGE_TYPES and isinstance(r.message, dict)
    ]
    assert stored and all(isinstance(c, StoredContent) for _, c in stored)
    assert all((c.file is None) == (line > first) for line, c in stored)
    assert any(line > first for line, _ in stored)
