"""File shapes real users have: leading metadata records, legacy rollouts, Codex turns typed by a
human or injected by the harness, bodies with system-role messages. Small generated cases, plus
the shared rollouts where they hold the shape."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from ipse.prefix import read_requests
from ipse.transcript import Text, detect, load
from ipse.transcript._model import Origin
from ipse.transcript._sniff import body_dialect
from ipse.transcript._stats import message_counts


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _cc(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("message_id", f"msg_{uuid}"), model="claude-sonnet-4-5")
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": message,
        **extra,
    }


# -------------------------------------------------------------------------- format detection


@pytest.mark.parametrize(
    "leading",
    [
        [{"type": "summary", "summary": "an earlier session"}],
        [{"type": "custom-title", "customTitle": "t"}, {"type": "last-prompt", "lastPrompt": "x"}],
        [{"type": "cost-state", "cost": 1.5}, {"type": "mode", "mode": "default"}],
        [{"type": "api-request-shape", "shapeHash": "h", "shape": {"system": [], "tools": []}}],
        [{"something": "a record no format writes"}] * 30,
    ],
)
def test_a_session_is_detected_past_leading_metadata(
    tmp_path: Path, leading: list[dict[str, Any]]
) -> None:
    path = _jsonl(
        tmp_path / "s.jsonl",
        [*leading, _cc("user", "u1", None, "hi"), _cc("assistant", "a1", "u1", "hello")],
    )
    assert detect(path) == "claude-code"
    assert len(load(path).current().messages) == 2


def test_a_legacy_codex_rollout_is_detected_and_read(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "rollout.jsonl",
        [
            {"id": "r1", "timestamp": "2025-05-01T00:00:00Z", "instructions": "be brief"},
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /r"}],
            },
            {"record_type": "state"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hello"}],
            },
        ],
    )
    assert detect(path) == "codex"
    conversation = load(path).current()
    assert [m.role for m in conversation.messages] == ["user", "user", "assistant"]
    assert conversation.system[0].text == "be brief"  # type: ignore[union-attr]
    assert message_counts(conversation.messages)["turns"] == 1


# -------------------------------------------------------------------------------- the sniffer


def test_a_system_role_message_does_not_make_an_anthropic_body_openai() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "system", "content": "a harness note"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x"}]},
        ],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    assert body_dialect(body) == "anthropic"
    assert body_dialect({**body, "system": None, "thinking": None}) == "anthropic"
    plain = {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user"}]}
    assert body_dialect(plain) == "openai-chat"


def test_a_body_with_system_messages_is_detected_as_anthropic(tmp_path: Path) -> None:
    body = {
        "model": "claude-opus-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "system", "content": "note"},
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]},
        ],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body, indent=2))
    assert detect(path) == "anthropic"


# ------------------------------------------------------------------------ codex human turns


def _event(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}


def _user(text: str) -> dict[str, Any]:
    return _event(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    )


def _said(text: str) -> dict[str, Any]:
    return _event("event_msg", {"type": "user_message", "message": text})


def _reply(text: str) -> dict[str, Any]:
    return _event(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        },
    )


def test_codex_human_turns_are_the_typed_ones(tmp_path: Path) -> None:
    records = [
        _event("session_meta", {"id": "s", "base_instructions": {"text": "inst"}}),
        _user("# AGENTS.md instructions for /repo"),  # injected: no event
        _user("<environment_context>cwd</environment_context>"),
        _user("fix the bug"),
        _said("fix the bug"),
        _reply("done"),
        _said("and the test"),  # the event may come first
        _user("and the test"),
        _reply("done too"),
        _event(
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "fix the bug"}],
                    },
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "and the test"}],
                    },
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "summary"}],
                    },
                ],
            },
        ),
        _user("# AGENTS.md instructions for /repo"),
        _user("one more"),
        _said("one more"),
        _reply("ok"),
    ]
    source = load(_jsonl(tmp_path / "rollout.jsonl", records))
    assert source.thread is not None
    assert message_counts(source.thread.all_messages())["turns"] == 3
    assert message_counts(source.thread.conversation.messages)["turns"] == 1
    replayed = [m for m in source.thread.conversation.messages if m.meta.get("replayed")]
    assert len(replayed) == 2


def test_shared_rollouts_count_the_user_message_events(shared_data: Path) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        events = sum(
            1
            for line in path.read_bytes().splitlines()
            if (r := json.loads(line))["type"] == "event_msg"
            and r["payload"].get("type") == "user_message"
        )
        source = load(path)
        assert source.thread is not None
        assert message_counts(source.thread.all_messages())["turns"] == events  # 7 and 38


def test_prefix_and_lint_take_format(tmp_path: Path, cli: Any) -> None:
    path = _jsonl(
        tmp_path / "s.jsonl",
        [
            _cc("user", "u1", None, "hi"),
            _cc("assistant", "a1", "u1", "hello"),
            _cc("user", "u2", "a1", "more"),
            _cc("assistant", "a2", "u2", "sure"),
        ],
    )
    for command in ("prefix", "lint"):
        result = cli(command, str(path), "--format", "claude-code", "--json")
        assert result.returncode in (0, 1), result.stderr
        result = cli(command, str(path), "--format", "nonsense")
        assert result.returncode == 2


# ------------------------------------------------ new record types and the journaled requests


def _sha(message: dict[str, Any]) -> str:
    data = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


SYSTEM = [
    {"type": "text", "text": "You are Claude Code. " * 300, "cache_control": {"type": "ephemeral"}}
]
TOOLS = [{"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}}]


def _journaled_session(path: Path, turns: int = 3) -> Path:
    records: list[dict[str, Any]] = [
        {"type": "custom-title", "customTitle": "journaled", "sessionId": "s1"},
        {
            "type": "api-request-shape",
            "shapeHash": "shape1",
            "shape": {"system": SYSTEM, "tools": TOOLS},
        },
        {"type": "cost-state", "sessionId": "s1", "cost": 0.1},
        {"type": "zebra-record", "stripes": 12},  # a type no version writes yet
    ]
    parent: str | None = None
    sent: list[dict[str, Any]] = []
    for n in range(turns):
        attachment = {
            "type": "attachment",
            "uuid": f"att{n}",
            "parentUuid": parent,
            "sessionId": "s1",
            "attachment": {"type": "date", "rendered": "Today is Monday", "renderedRole": "user"},
        }
        user_message = {"role": "user", "content": f"step {n} " + "words " * 50}
        user = _cc("user", f"u{n}", f"att{n}", user_message["content"])
        records += [
            attachment,
            {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"},
            user,
            {"type": "api-request-blob", "hash": _sha(user_message), "message": user_message},
        ]
        tail = [_sha(m) for m in sent[-1:]] + [_sha(user_message)]  # last reply has no blob
        keep = max(0, len(sent) - 1)
        records.append(
            {
                "type": "api-request",
                "id": f"req{n}",
                "shapeHash": "shape1",
                "params": {"model": "claude-opus-4-6", "max_tokens": 32000, "betas": ["x"]},
                "keep": keep,
                "tail": tail,
                "cacheControl": [
                    {"path": ["messages", 2 * n, "content", 0], "value": {"type": "ephemeral"}}
                ],
            }
        )
        reply = {"role": "assistant", "content": [{"type": "text", "text": f"did {n}"}]}
        assistant = _cc("assistant", f"a{n}", f"u{n}", reply["content"], requestRef=f"req{n}")
        assistant["message"]["usage"] = {
            "input_tokens": 3,
            "cache_read_input_tokens": 2000 if n else 0,
            "cache_creation_input_tokens": 200 if n else 2100,
        }
        records += [assistant, {"type": "mode", "mode": "default", "sessionId": "s1"}]
        sent += [user_message, reply]
        parent = f"a{n}"
    records.append({"type": "last-prompt", "lastPrompt": "x", "sessionId": "s1"})
    return _jsonl(path, records)


def test_new_record_types_never_break_reading(tmp_path: Path, cli: Any) -> None:
    path = _journaled_session(tmp_path / "s.jsonl")
    assert detect(path) == "claude-code"
    source = load(path)
    assert source.thread is not None
    assert [m.role for m in source.current().messages] == ["user", "assistant"] * 3
    assert source.thread.skipped.get("attachment") == 3
    report = json.loads(cli("inspect", str(path), "--json").stdout)
    assert report["messages"] == 6 and report["turns"] == 3
    result = cli("handoff", str(path), "--at", "end", "-o", str(tmp_path / "o.json"))
    assert result.returncode == 0, result.stderr


def test_prefix_uses_the_journaled_requests(tmp_path: Path, cli: Any) -> None:
    path = _journaled_session(tmp_path / "s.jsonl")
    log = read_requests(path)
    assert len(log.requests) == 3
    for request in log.requests:
        assert request.body["system"] == SYSTEM and request.body["tools"] == TOOLS
        assert request.body["max_tokens"] == 32000 and "betas" not in request.body
        assert "cache_control" not in request.body  # breakpoints as journaled
    second = log.requests[-1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user", "assistant", "user"]
    assert second[4]["content"][0]["cache_control"] == {"type": "ephemeral"}
    document = json.loads(cli("prefix", str(path), "--json").stdout)
    assert not any("fitted" in w or "placeholder" in w for w in document["summary"]["warnings"])
    assert all(r["basis"] == "recorded" for r in document["requests"])


def test_an_unresolvable_journal_keeps_the_front_and_rebuilt_messages(tmp_path: Path) -> None:
    path = _journaled_session(tmp_path / "s.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:  # messages neither blobbed nor in the session
        if record.get("type") == "api-request":
            record["tail"] = ["0" * 64]
    log = read_requests(_jsonl(path, records))
    for request in log.requests:
        assert request.body["system"] == SYSTEM
        assert request.body["cache_control"] == {"type": "ephemeral"}  # messages as rebuilt


@pytest.mark.parametrize(
    "garbage",
    [
        {"type": "api-request", "id": "req1", "keep": "x", "tail": "y", "cacheControl": 3},
        {"type": "api-request", "id": "req1", "keep": 99, "tail": [], "shapeHash": None},
        {"type": "api-request", "id": "req1", "keep": 0, "tail": [1, None], "params": []},
        {
            "type": "api-request",
            "id": "req1",
            "keep": 0,
            "tail": [],
            "cacheControl": [{"path": ["messages", 7, "content", 9], "value": {}}, "x"],
        },
        {"type": "api-request-shape", "shapeHash": "shape1", "shape": "not a shape"},
        {"type": "api-request-blob", "hash": 5, "message": None},
    ],
)
def test_a_malformed_journal_never_breaks_reading(tmp_path: Path, garbage: dict[str, Any]) -> None:
    path = _journaled_session(tmp_path / "s.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    log = read_requests(_jsonl(path, [*records, garbage, _cc("user", "z", "a2", "more")]))
    assert len(log.requests) == 3
    assert all(r.body.get("messages") for r in log.requests)


def test_an_event_written_first_goes_with_the_item_it_repeats(tmp_path: Path) -> None:
    records = [
        _said("deploy it"),
        _user("# AGENTS.md instructions for /repo"),
        _user("<environment_context>cwd</environment_context>"),
        _user("deploy it"),
        _reply("deployed"),
        _user("a note the harness adds"),
        _user("thanks"),
        _said("[the event's own wording]"),  # no text match: the turn's latest item
        _reply("welcome"),
    ]
    conversation = load(_jsonl(tmp_path / "rollout.jsonl", records)).current()
    human = [
        b.text
        for m in conversation.messages
        for b in m.blocks
        if isinstance(b, Text) and b.origin is Origin.HUMAN
    ]
    assert human == ["deploy it", "thanks"]


def test_the_2_1_332_journal_shape(tmp_path: Path) -> None:
    """As Claude Code 2.1.332 writes it: ``keep: 0`` and every hash in ``tail``; blobs only for
    the harness's system-role messages; a string message hashed as its one text block; the
    system prompt's breakpoints given by path; one response id reused by a later turn."""
    note: dict[str, Any] = {"role": "system", "content": [{"type": "text", "text": "# Env"}]}
    system = [{"type": "text", "text": "You are an agent. " * 200}, {"type": "text", "text": "Be."}]
    marks = [{"path": ["system", 1], "value": {"type": "ephemeral"}}]
    first_user = {"role": "user", "content": [{"type": "text", "text": "hello there"}]}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "First answer."}]}
    second_user = {"role": "user", "content": [{"type": "text", "text": "and again"}]}
    records = [
        _cc("user", "u1", None, "hello there"),
        {"type": "api-request-shape", "shapeHash": "s", "shape": {"system": system, "tools": []}},
        {"type": "api-request-blob", "hash": _sha(note), "message": note},
        {
            "type": "api-request",
            "id": "r1",
            "shapeHash": "s",
            "params": {"model": "claude-opus-5-5", "max_tokens": 128000},
            "keep": 0,
            "tail": [_sha(first_user), _sha(note)],
            "cacheControl": [*marks, {"path": ["messages", 1, "content", 0], "value": {}}],
        },
        _cc("assistant", "a1", "u1", reply["content"], message_id="msg_same", requestRef="r1"),
        _cc("user", "u2", "a1", "and again"),
        {
            "type": "api-request",
            "id": "r2",
            "shapeHash": "s",
            "params": {"model": "claude-opus-5-5", "max_tokens": 128000},
            "keep": 0,
            "tail": [_sha(first_user), _sha(note), _sha(reply), _sha(second_user)],
            "cacheControl": marks,
        },
        _cc(
            "assistant",
            "a2",
            "u2",
            [{"type": "text", "text": "x"}],
            message_id="msg_same",
            requestRef="r2",
        ),
    ]
    path = _jsonl(tmp_path / "s.jsonl", records)
    assert [m.role for m in load(path).current().messages] == ["user", "assistant"] * 2
    log = read_requests(path)
    assert len(log.requests) == 2
    first, second = (r.body for r in log.requests)
    assert first["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in first["system"][0]
    assert first["messages"] == [
        {"role": "user", "content": "hello there"},
        {"role": "system", "content": [{**note["content"][0], "cache_control": {}}]},
    ]
    assert [m["role"] for m in second["messages"]] == ["user", "system", "assistant", "user"]
