"""Valid but unusual input through every command: lone surrogates, unknown record and block
types, records without message ids, unicode everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipse import jsonio
from ipse.transcript import Text, load
from tests.conftest import CliResult, run_cli


def _ipse(*args: str, home: Path) -> CliResult:
    return run_cli(*args, env={"IPSE_HOME": str(home)})


def _record(kind: str, uuid: str, parent: str | None, message: Any, **extra: Any) -> str:
    body = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "adv",
        "timestamp": f"2026-01-01T00:00:{len(uuid):02d}Z",
        **extra,
    }
    if message is not None:
        body["message"] = message
    return json.dumps(body, ensure_ascii=False)


@pytest.fixture()
def odd_session(tmp_path: Path) -> Path:
    lines = [
        _record("user", "u1", None, {"role": "user", "content": "héllo — 日本語 🚀"}),
        # an assistant text with a lone surrogate (a model's output cut inside an emoji)
        '{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"adv",'
        '"message":{"role":"assistant","model":"claude-future-9","content":'
        '[{"type":"text","text":"cut emoji: \\ud83d and more"}]}}',
        _record("attachment", "x1", "a1", None, attachment={"type": "new_kind", "data": 1}),
        _record(
            "assistant",
            "a2",
            "x1",
            {
                "role": "assistant",
                "model": "claude-future-9",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
            },
        ),
        _record(
            "user",
            "r1",
            "a2",
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {"type": "text", "text": "out"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": "iVBORw0KGgo=",
                                },
                            },
                        ],
                    }
                ],
            },
        ),
        _record(
            "assistant",
            "a3",
            "r1",
            {
                "role": "assistant",
                "model": "claude-future-9",
                "content": [
                    {"type": "future_block", "x": [1, 2]},
                    {"type": "text", "text": "done"},
                ],
            },
        ),
        _record("brand-new-record-type", "n1", "a3", None, payload={"k": "v"}),
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_lone_surrogates_read_and_write_back() -> None:
    value = jsonio.loads(b'{"t": "a\\ud800b"}')
    assert value == {"t": "a\ud800b"}
    assert jsonio.loads(jsonio.dumps(value)) == value


def test_reader_keeps_odd_content(odd_session: Path) -> None:
    conversation = load(odd_session).current()
    texts = [b.text for m in conversation.messages for b in m.blocks if isinstance(b, Text)]
    assert "cut emoji: \ud83d and more" in texts
    kinds = [b.kind for m in conversation.messages for b in m.blocks]
    assert kinds.count("other") == 1  # the future block; the image sits inside the result
    assert conversation.model == "claude-future-9"


def test_every_command_takes_odd_input(odd_session: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    inspect = _ipse("inspect", str(odd_session), "--json", home=home)
    assert inspect.returncode == 0, inspect.stderr
    assert json.loads(inspect.stdout)["tool_calls"] == 1

    out = tmp_path / "out.json"
    handoff = _ipse("handoff", str(odd_session), "--at", "end", "-o", str(out), "--json", home=home)
    assert handoff.returncode == 0, handoff.stderr
    report = json.loads(handoff.stdout)
    assert report["authored_preserved"] is True
    written = json.loads(out.read_text())
    assert any("\ud83d" in json.dumps(m) or "\\ud83d" in json.dumps(m) for m in written["messages"])

    prefix = _ipse("prefix", str(odd_session), "--json", home=home)
    assert prefix.returncode == 0, prefix.stderr
    assert json.loads(prefix.stdout)["requests"]


def test_names_answer_for_any_json_value() -> None:
    from ipse._names import Names

    kinds = Names({"text", "image"})
    assert "text" in kinds and "tool_use" not in kinds
    found: list[object] = [[], {}, None, 7]  # what a document may hold where a name belongs
    assert not any(value in kinds for value in found)
    assert isinstance(kinds, frozenset) and sorted(kinds) == ["image", "text"]


def test_a_harness_file_with_an_id_of_another_kind_is_read(tmp_path: Path) -> None:
    """Found by fuzzing: a Roo history whose truncation id is a list crashed every command; an
    id of another kind now links nothing, and the rest of the file is read."""
    from tests.transcript import harness_cases as cases

    history = cases.roo_history()
    for message in history:
        if message.get("isTruncationMarker"):
            message["truncationId"] = []
    path = cases.write_json(tmp_path / "api_conversation_history.json", history)
    for command in (["inspect"], ["handoff", "--at", "now"], ["prefix"]):
        done = _ipse(*command, str(path), home=tmp_path / "home")
        assert done.returncode == 0, done.stderr


def test_any_other_shape_surprise_in_a_harness_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a reader does not expect in these undocumented formats is bad input, never a
    crash: the error names the format and the file."""
    from ipse.transcript._formats import swe_agent
    from tests.transcript import harness_cases as cases

    def surprised(*_: Any, **__: Any) -> Any:
        raise KeyError("a key the reader counted on")

    monkeypatch.setattr(swe_agent, "read_trajectory", surprised)
    path = cases.write_json(tmp_path / "traj.json", cases.mini_swe_agent_traj())
    done = _ipse("inspect", str(path), home=tmp_path / "home")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not a mini-swe-agent file ipse can read" in done.stderr and "KeyError" in done.stderr


def test_a_lone_surrogate_in_a_tool_name_is_archived(tmp_path: Path) -> None:
    """Found by fuzzing: SQLite (and PostgreSQL) refuse lone surrogates and NUL in text; the
    handoff wrote its output, then crashed archiving."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t\u0000\ud800", "name": "B\ud800sh", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t\u0000\ud800", "content": "ok"}
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": "next"},
        ],
    }
    path = tmp_path / "body.json"
    path.write_bytes(jsonio.dumps(body))
    home = tmp_path / "home"
    done = _ipse("handoff", str(path), "--at", "now", "-o", str(tmp_path / "out.json"), home=home)
    assert done.returncode == 0, done.stderr
    listed = _ipse("archive", "list", "--json", home=home)
    [session] = json.loads(listed.stdout)["sessions"]
    items = json.loads(_ipse("archive", "list", session["session"], "--json", home=home).stdout)
    [item] = items["items"]
    assert item["tool"] == "B\\ud800sh" and item["id"] == "t\\x00\\ud800"


def test_record_ids_of_another_kind_link_to_nothing(tmp_path: Path) -> None:
    """Found by fuzzing real sessions: a ``parentUuid``, ``uuid`` or ``message.id`` that is a list
    crashed reading the record tree (main thread and sidechains)."""
    lines = [
        _record("user", "u1", None, {"role": "user", "content": "start"}),
        json.dumps(  # ASCII JSON: the model name's lone surrogate as its escape
            {
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "timestamp": "2026-01-01T00:00:01Z",
                "message": {
                    "role": "assistant",
                    "id": ["m1"],
                    "model": "claude-\ud83d",
                    "content": "ok",
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "uuid": ["x"],
                "parentUuid": ["a1"],
                "message": {"role": "user", "content": "odd"},
            }
        ),
        _record("user", "s1", "a1", {"role": "user", "content": "side"}, isSidechain=True),
        json.dumps(
            {
                "type": "assistant",
                "uuid": "s2",
                "parentUuid": {"a": 1},
                "isSidechain": True,
                "message": {"role": "assistant", "content": "x"},
            }
        ),
        json.dumps(
            {
                "type": "user",
                "uuid": "u2",
                "parentUuid": "a1",
                "message": {"role": "user", "content": "the \ud83d end"},
            }
        ),  # ASCII JSON: the lone surrogate as its escape
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    home = tmp_path / "home"
    for command in (
        ["inspect", str(path), "--json"],
        ["inspect", str(path), "--thread", "sidechain-1"],
        ["prefix", str(path)],
        ["handoff", str(path), "--at", "now", "-o", str(tmp_path / "out.json")],
        ["report", str(path), "-o", str(tmp_path / "r.html")],
    ):
        done = _ipse(*command, home=home)
        assert done.returncode in (0, 1, 2), (command, done.stderr)
        assert "internal error" not in done.stderr, (command, done.stderr)
    assert "claude-\\ud83d" in (tmp_path / "r.html").read_text()


def test_a_tool_call_whose_function_is_not_an_object_is_counted(tmp_path: Path) -> None:
    """Found by fuzzing: counting a chat message whose call's ``function`` is a list crashed."""
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": ["x"]}],
            },
            {"role": "user", "content": "go"},
        ],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    done = _ipse("prefix", str(path), "--tokenizer", "o200k", home=tmp_path / "home")
    assert done.returncode == 0, done.stderr


def test_integers_beyond_64_bits_are_read_and_written_exact(tmp_path: Path) -> None:
    """A Claude Code session keeps such integers exact (orjson would make them floats), and
    every command writes them back."""
    path = tmp_path / "big.jsonl"
    numbers = {"n": 2**70, "m": -(2**63) - 1, "k": 123456789012345680000}
    call = {"type": "tool_use", "id": "t1", "name": "Calc", "input": numbers}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    lines = [
        _record("user", "u1", None, {"role": "user", "content": "count"}),
        _record("assistant", "a1", "u1", {"id": "m1", "role": "assistant", "content": [call]}),
        _record("user", "r1", "a1", {"role": "user", "content": [result]}),
        _record("assistant", "a2", "r1", {"id": "m2", "role": "assistant", "content": "done"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = [b for m in load(path).current().messages for b in m.blocks if b.kind == "tool_call"]
    assert [c.raw["input"] for c in calls if c.raw is not None] == [numbers]
    assert json.loads(jsonio.dumps(numbers)) == numbers
    home = tmp_path / "home"
    for args in (["inspect"], ["prefix"], ["handoff", "--at", "end", "-o", str(tmp_path / "o")]):
        result_ = _ipse(*args, str(path), "--json", home=home)
        assert result_.returncode == 0, (args, result_.stderr)
