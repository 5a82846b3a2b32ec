"""Readers of the harnesses people run: Cline and Roo Code, SWE-agent, mini-swe-agent,
OpenHands, Gemini CLI. Generated files in each harness's shape (tests/transcript/
harness_cases.py), sniffed, read, written back where the format can be, refused where not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipse.errors import UsageError
from ipse.transcript import FORMATS, Text, Thinking, ToolCall, ToolResult, detect, load, write
from ipse.transcript._model import Origin
from tests.conftest import OPENAI_TRAJ, SHARED, CliRun
from tests.transcript import harness_cases as cases

ANTHROPIC_MESSAGE_KEYS = {"role", "content"}
CHAT_MESSAGE_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id"}


def _texts(conversation: Any, origin: Origin) -> list[str]:
    return [
        b.text
        for m in conversation.messages
        for b in m.blocks
        if isinstance(b, Text) and b.origin == origin
    ]


# ------------------------------------------------------------------------------ Cline / Roo


def test_cline_history_is_sniffed_read_and_written_as_an_api_body(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "api_conversation_history.json", cases.cline_history())
    assert detect(path) == "cline"
    source = load(path)
    conversation = source.current()
    assert conversation.dialect == "anthropic"
    assert conversation.model == "claude-sonnet-4-5"
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user", "assistant"]
    assert _texts(conversation, Origin.HUMAN) == [f"<task>\n{cases.HUMAN}\n</task>"]
    assert _texts(conversation, Origin.HARNESS)[0].startswith("<environment_details>")
    assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
    assert conversation.messages[0].meta["timestamp"] == "2025-11-24T16:00:00Z"
    assert not any(isinstance(b, Thinking) for _, _, b in conversation.blocks())  # unsigned
    body = write(conversation)
    for message in body["messages"]:
        assert set(message) <= ANTHROPIC_MESSAGE_KEYS
        for block in message["content"]:
            assert not {"call_id", "reasoning_details", "signature", "summary"} & set(block)


def test_cline_times_come_from_ui_messages_when_messages_have_none(tmp_path: Path) -> None:
    path = cases.write_json(
        tmp_path / "api_conversation_history.json", cases.cline_history(extras=False)
    )
    cases.write_json(tmp_path / "ui_messages.json", cases.ui_messages())
    conversation = load(path).current()
    times = [m.meta.get("timestamp") for m in conversation.messages]
    assert times == [
        "2025-11-24T16:00:00.900000Z",
        "2025-11-24T16:00:01.500000Z",
        "2025-11-24T16:00:02.500000Z",
        "2025-11-24T16:00:03.500000Z",
    ]
    assert conversation.model is None


def test_roo_history_is_what_roo_sends(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "api_conversation_history.json", cases.roo_history())
    assert detect(path) == "cline"
    conversation = load(path).current()
    texts = [m.text for m in conversation.messages]
    assert texts == [
        "Summary of the conversation so far.",
        "[truncated]",
        f"<user_message>\n{cases.HUMAN}\n</user_message>",
        cases.AGENT_END,
    ]
    assert _texts(conversation, Origin.HUMAN) == [f"<user_message>\n{cases.HUMAN}\n</user_message>"]
    assert not any(isinstance(b, ToolResult) for _, _, b in conversation.blocks())


def test_a_bare_array_of_something_else_names_the_arrays_it_reads(tmp_path: Path) -> None:
    from ipse.errors import UnknownFormat

    path = cases.write_json(tmp_path / "x.json", [1, 2, 3])
    with pytest.raises(UnknownFormat, match="Anthropic messages"):
        detect(path)


_extra_keys = st.dictionaries(
    st.sampled_from(["ts", "id", "modelInfo", "metrics", "isSummary", "condenseId", "x_new"]),
    st.one_of(st.integers(), st.text(max_size=5), st.booleans()),
    max_size=4,
)


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(st.text(min_size=1, max_size=30).filter(str.strip), min_size=1, max_size=6),
    extras=st.lists(_extra_keys, min_size=6, max_size=6),
)
def test_cline_extras_never_reach_the_body_and_words_survive(
    tmp_path_factory: pytest.TempPathFactory, words: list[str], extras: list[dict[str, Any]]
) -> None:
    items: list[dict[str, Any]] = []
    for index, word in enumerate(words):
        role = "user" if index % 2 == 0 else "assistant"
        extra = {k: v for k, v in extras[index].items() if k != "isSummary"}
        items.append(
            {"role": role, "content": [{"type": "text", "text": word, "call_id": "r"}], **extra}
        )
    path = cases.write_json(tmp_path_factory.mktemp("cline") / "h.json", items)
    body = write(load(path, "cline").current())
    assert [b["text"] for m in body["messages"] for b in m["content"]] == words
    assert all(set(m) <= ANTHROPIC_MESSAGE_KEYS for m in body["messages"])


# -------------------------------------------------------------------- SWE-agent, mini-swe-agent


def test_swe_agent_traj_reads_history_as_chat(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "repo__repo-1.traj", cases.swe_agent_traj())
    assert detect(path) == "swe-agent"
    conversation = load(path).current()
    assert conversation.dialect == "openai-chat"
    assert conversation.model == "claude-sonnet-4-20250514"
    assert getattr(conversation.system[0], "text", None) == "You are a helpful assistant."
    calls = list(conversation.tool_calls())
    assert [(c.id, c.name, c.input) for c in calls] == [("call_1", "bash", {"command": "ls"})]
    result = conversation.messages[2].blocks[0]
    assert isinstance(result, ToolResult) and result.call_id == "call_1"
    assert conversation.messages[1].meta["message_type"] == "action"
    body = write(conversation)
    assert body["model"] == "claude-sonnet-4-20250514"
    assert all(set(m) <= CHAT_MESSAGE_KEYS for m in body["messages"])
    assert body["messages"][3] == {
        "role": "tool",
        "content": [{"type": "text", "text": "parser.py"}],
        "tool_call_id": "call_1",
    }


def test_mini_swe_agent_trajectory_writes_an_api_body(tmp_path: Path, cli: CliRun) -> None:
    path = cases.write_json(tmp_path / "traj.json", cases.mini_swe_agent_traj())
    assert detect(path) == "mini-swe-agent"
    conversation = load(path).current()
    assert conversation.meta["exit"]["extra"]["exit_status"] == "Submitted"
    for at in ("end", "now"):
        out = tmp_path / f"{at}.json"
        result = cli("handoff", str(path), "--at", at, "-o", str(out), "--no-archive")
        assert result.returncode == 0, result.stderr
        body = json.loads(out.read_text())
        assert set(body) == {"model", "messages"}
        assert body["model"] == "deepseek/deepseek-chat"
        for message in body["messages"]:
            assert message["role"] in {"system", "user", "assistant", "tool"}
            assert set(message) <= CHAT_MESSAGE_KEYS
            for call in message.get("tool_calls") or []:
                assert set(call) == {"id", "type", "function"}


def test_a_trajectory_without_a_model_takes_model_from_the_command(
    tmp_path: Path, cli: CliRun
) -> None:
    path = cases.write_json(tmp_path / "traj.json", cases.mini_swe_agent_traj(with_model=False))
    out = tmp_path / "out.json"
    result = cli("handoff", str(path), "--at", "end", "-o", str(out), "--no-archive")
    assert result.returncode == 0 and "--model" in result.stderr
    assert "model" not in json.loads(out.read_text())
    result = cli(
        "handoff", str(path), "--at", "end", "-o", str(out), "--no-archive", "--model", "gpt-4.1"
    )
    assert result.returncode == 0 and json.loads(out.read_text())["model"] == "gpt-4.1"


@SHARED
def test_the_real_mini_swe_agent_trajectory_hands_off_at_end(tmp_path: Path, cli: CliRun) -> None:
    out = tmp_path / "out.json"
    result = cli("handoff", str(OPENAI_TRAJ), "--at", "end", "-o", str(out), "--no-archive")
    assert result.returncode == 0, result.stderr
    body = json.loads(out.read_text())
    assert body["model"] == "deepseek/deepseek-chat"
    assert {m["role"] for m in body["messages"]} <= {"system", "user", "assistant", "tool"}
    assert all(set(m) <= CHAT_MESSAGE_KEYS for m in body["messages"])
    assert cli("verify", str(OPENAI_TRAJ), str(out)).returncode == 0


# ---------------------------------------------------------------------------------- OpenHands


@pytest.mark.parametrize("export", [False, True], ids=["event-list", "trajectory-export"])
def test_openhands_events_map_onto_calls_results_and_authored_text(
    tmp_path: Path, export: bool
) -> None:
    events = cases.openhands_events()
    path = cases.write_json(tmp_path / "t.json", {"trajectory": events} if export else events)
    assert detect(path) == "openhands"
    conversation = load(path).current()
    assert getattr(conversation.system[0], "text", None) == "You are OpenHands agent."
    assert _texts(conversation, Origin.HUMAN) == [cases.HUMAN]
    assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
    roles = [m.role for m in conversation.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "assistant"]
    parallel = [b for b in conversation.messages[1].blocks if isinstance(b, ToolCall)]
    assert [(c.id, c.name) for c in parallel] == [
        ("toolu_a", "execute_bash"),
        ("toolu_b", "str_replace_editor"),
    ]
    assert parallel[0].input == {"command": "ls", "is_input": False, "blocking": False}
    results = [m.blocks[0] for m in conversation.messages if m.role == "tool"]
    assert [(r.call_id, r.content) for r in results if isinstance(r, ToolResult)] == [
        ("toolu_a", "parser.py"),
        ("toolu_b", "def parse(): ..."),
    ]
    assert conversation.meta["skipped"] == {
        "action:recall": 1,
        "observation:agent_state_changed": 1,
        "action:change_agent_state": 1,
    }


def test_openhands_cannot_be_written_and_says_what_can(tmp_path: Path, cli: CliRun) -> None:
    path = cases.write_json(tmp_path / "t.json", cases.openhands_events())
    with pytest.raises(UsageError, match=r"read only.*anthropic.*cline"):
        write(load(path).current())
    result = cli("handoff", str(path), "--at", "end", "-o", str(tmp_path / "o.json"))
    assert result.returncode == 2
    assert "openhands conversations are read only" in result.stderr
    assert "openai-chat" in result.stderr and not (tmp_path / "o.json").exists()
    assert cli("inspect", str(path)).returncode == 0


# --------------------------------------------------------------------------------- Gemini CLI


def _check_gemini_session(conversation: Any) -> None:
    assert conversation.model == "gemini-2.5-pro"
    assert [m.role for m in conversation.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert _texts(conversation, Origin.HUMAN) == [cases.HUMAN]
    assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
    thinking = conversation.messages[1].blocks[0]
    assert isinstance(thinking, Thinking) and "Look at the parser." in thinking.text
    results = [m.blocks[0] for m in conversation.messages if m.role == "tool"]
    assert [(r.call_id, r.text, r.is_error) for r in results if isinstance(r, ToolResult)] == [
        ("read_file-1", "def parse(): ...", False),
        ("run_shell_command-2", "exit 1", True),
    ]
    assert conversation.messages[1].meta["tokens"]["total"] == 930


def test_gemini_session_jsonl_replays_rewinds_and_rewrites(tmp_path: Path) -> None:
    path = cases.write_jsonl(
        tmp_path / "session-2026-08-01T10-00-s1.jsonl", cases.gemini_session_jsonl()
    )
    assert detect(path) == "gemini-cli"
    conversation = load(path).current()
    _check_gemini_session(conversation)
    assert conversation.meta["skipped"] == {"info": 1}


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
def test_gemini_legacy_session_json(tmp_path: Path, indent: int | None) -> None:
    records = cases.gemini_session_jsonl()
    live = [r for r in records if r.get("id") in ("m3", "m4", "m6")]
    live.insert(1, records[7])  # the finished m5
    document = {**records[0], "messages": live}
    path = cases.write_json(tmp_path / "session-x.json", document, indent=indent)
    assert detect(path) == "gemini-cli"
    _check_gemini_session(load(path).current())


@pytest.mark.parametrize(
    "shape", ["bare-list", "chat-save", "restore"], ids=["bare-list", "chat-save", "restore"]
)
def test_gemini_checkpoints(tmp_path: Path, shape: str) -> None:
    contents = cases.gemini_contents()
    document: Any = {
        "bare-list": contents,
        "chat-save": {"history": contents, "authType": "oauth-personal"},
        "restore": {
            "history": [{"type": "user", "text": cases.HUMAN, "id": 1}],
            "clientHistory": contents,
            "commitHash": "abc",
            "toolCall": {"name": "write_file", "args": {"file_path": "/repo/parser.py"}},
            "messageId": "m9",
        },
    }[shape]
    path = cases.write_json(tmp_path / "checkpoint-x.json", document)
    assert detect(path) == "gemini-cli"
    conversation = load(path).current()
    assert [m.role for m in conversation.messages] == ["user", "assistant", "tool", "assistant"]
    call = next(conversation.tool_calls())
    result = conversation.messages[2].blocks[0]
    assert isinstance(result, ToolResult) and result.call_id == call.id
    assert result.text == "def parse(): ..."
    assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
    with pytest.raises(UsageError, match="gemini-cli conversations are read only"):
        write(conversation)


def test_every_new_format_is_named_for_format(tmp_path: Path, cli: CliRun) -> None:
    for name in ("cline", "swe-agent", "mini-swe-agent", "openhands", "gemini-cli"):
        assert name in FORMATS
    path = cases.write_json(tmp_path / "t.json", cases.mini_swe_agent_traj())
    result = cli("inspect", str(path), "--format", "openai-chat", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["format"] == "openai-chat"
    result = cli("inspect", str(path), "--format", "mini-swe-agent", "--json")
    assert json.loads(result.stdout)["format"] == "mini-swe-agent"


def test_openhands_v1_sdk_events(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "events.json", cases.openhands_v1_events())
    assert detect(path) == "openhands"
    conversation = load(path).current()
    assert getattr(conversation.system[0], "text", None) == "You are OpenHands agent."
    assert _texts(conversation, Origin.HUMAN) == [cases.HUMAN]
    assert _texts(conversation, Origin.HARNESS) == ["<REPOSITORY_INFO>repo</REPOSITORY_INFO>"]
    assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
    assert [m.role for m in conversation.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    calls = list(conversation.tool_calls())
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("call_a", "terminal", {"command": "ls"}),
        ("call_b", "file_editor", {"command": "view", "path": "/repo/parser.py"}),
    ]
    results = [m.blocks[0] for m in conversation.messages if m.role == "tool"]
    assert [(r.call_id, r.text, r.is_error) for r in results if isinstance(r, ToolResult)] == [
        ("call_a", "parser.py", False),
        ("call_b", "no such file", True),
    ]
    assert isinstance(conversation.messages[1].blocks[0], Thinking)
    assert conversation.meta["skipped"] == {"ConversationStateUpdateEvent": 1}
    events = cases.write_json(tmp_path / "export.json", {"events": cases.openhands_v1_events()})
    assert detect(events) == "openhands"


OPENHANDS_EXAMPLES = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "openhands").glob("*.json")
)


@pytest.mark.parametrize("path", OPENHANDS_EXAMPLES, ids=lambda p: p.stem)
def test_real_openhands_trajectories(path: Path) -> None:
    events = json.loads(path.read_text())
    assert detect(path) == "openhands"
    conversation = load(path).current()
    human = [
        e["args"]["content"]
        for e in events
        if e.get("action") == "message" and e["source"] == "user"
    ]
    assert _texts(conversation, Origin.HUMAN) == human
    agent_said = [
        e["args"]["content"]
        for e in events
        if e.get("action") == "message" and e["source"] == "agent"
    ]
    thoughts = [
        e["args"]["thought"]
        for e in events
        if e.get("source") == "agent"
        and e.get("action") not in (None, "message")
        and e["args"].get("thought")
    ]
    assert sorted(_texts(conversation, Origin.AGENT)) == sorted(agent_said + thoughts)
    sent = {}  # the tool calls as the model sent them, from the recorded responses
    for event in events:
        response = (event.get("tool_call_metadata") or {}).get("model_response") or {}
        for choice in response.get("choices", []):
            for call in choice["message"].get("tool_calls") or []:
                sent[call["id"]] = (
                    call["function"]["name"],
                    json.loads(call["function"]["arguments"]),
                )
    calls = {c.id: (c.name, c.input) for c in conversation.tool_calls()}
    assert calls and calls == sent
    answered = {e["cause"] for e in events if "observation" in e and e.get("cause") is not None}
    results = [b for _, _, b in conversation.blocks() if isinstance(b, ToolResult)]
    assert len(results) == len(
        [e for e in events if e.get("id") in answered and e.get("tool_call_metadata")]
    )
    models = [
        e["tool_call_metadata"]["model_response"]["model"]
        for e in events
        if (e.get("tool_call_metadata") or {}).get("model_response")
    ]
    assert conversation.model == models[-1]


SWE_AGENT_EXAMPLES = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "swe-agent").glob("*.traj")
)


@pytest.mark.parametrize("path", SWE_AGENT_EXAMPLES, ids=lambda p: p.stem[:24])
def test_real_swe_agent_trajectories(path: Path, tmp_path: Path, cli: CliRun) -> None:
    document = json.loads(path.read_text())
    assert detect(path) == "swe-agent"
    conversation = load(path).current()
    history = document["history"]
    system = [h for h in history if h["role"] == "system"]
    assert len(conversation.system) == len(system)
    assert [m.role for m in conversation.messages] == [
        h["role"] for h in history if h["role"] != "system"
    ]
    expected_calls = [c["id"] for h in history for c in h.get("tool_calls") or []]
    assert [c.id for c in conversation.tool_calls()] == expected_calls
    expected_results = [h["tool_call_ids"][0] for h in history if h["role"] == "tool"]
    results = [b.call_id for _, _, b in conversation.blocks() if isinstance(b, ToolResult)]
    assert results == expected_results
    out = tmp_path / "out.json"
    result = cli(
        "handoff", str(path), "--at", "now", "-o", str(out), "--no-archive", "--model", "gpt-4o"
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(out.read_text())
    assert all(set(m) <= CHAT_MESSAGE_KEYS for m in body["messages"])
    assert body["model"] == "gpt-4o"


def test_cline_text_results_become_the_results_of_their_calls(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "api_conversation_history.json", cases.cline_text_results())
    conversation = load(path).current()
    assert conversation.meta["text_results"] == 1
    reply = conversation.messages[2]
    results = [b for b in reply.blocks if isinstance(b, ToolResult)]
    assert [(r.call_id, r.text) for r in results] == [
        ("tooluse_a", "[read_file for 'parser.py'] Result:\ndef parse(): ..."),
        ("tooluse_b", "result missing"),  # Cline's own filler: the answer is the human's words
    ]
    texts = [(b.origin, b.text.split("\n")[0]) for b in reply.blocks if isinstance(b, Text)]
    assert texts == [
        (Origin.HUMAN, "[ask_followup_question for 'Run the tests?'] Result:"),
        (Origin.HARNESS, "# TODO LIST UPDATE REQUIRED - update task_progress"),
        (Origin.HARNESS, "<environment_details>"),
    ]
    body = write(conversation)
    assert [b["type"] for b in body["messages"][2]["content"]] == [
        "tool_result",
        "tool_result",
        "text",
        "text",
        "text",
    ]


def test_cline_xml_tool_era_keeps_every_word_as_text(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": [{"type": "text", "text": f"<task>\n{cases.HUMAN}\n</task>"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "<read_file>\n<path>parser.py</path>\n</read_file>"}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'parser.py'] Result:"},
                {"type": "text", "text": "def parse(): ..."},
            ],
        },
    ]
    path = cases.write_json(tmp_path / "h.json", items)
    conversation = load(path).current()
    assert conversation.meta["text_results"] == 0
    assert write(conversation)["messages"] == items
    assert [b.origin for b in conversation.messages[2].blocks if isinstance(b, Text)] == [
        Origin.HARNESS
    ] * 2


def test_gemini_compress_replaces_the_history(tmp_path: Path) -> None:
    records = cases.gemini_session_jsonl()
    summary = {
        "id": "c1",
        "timestamp": "2026-08-01T10:01:00Z",
        "type": "user",
        "content": [{"text": "<state_snapshot>the parser is fixed</state_snapshot>"}],
    }
    records.append({"$set": {"messages": [summary]}})
    records.append(
        {"id": "m7", "timestamp": "2026-08-01T10:02:00Z", "type": "user", "content": "thanks"}
    )
    path = cases.write_jsonl(tmp_path / "session.jsonl", records)
    conversation = load(path).current()
    assert [m.text for m in conversation.messages] == [
        "<state_snapshot>the parser is fixed</state_snapshot>",
        "thanks",
    ]


# ------------------------------------------------------------------ generated event sequences

_words = st.text(min_size=1, max_size=20).filter(str.strip)


@st.composite
def _openhands_run(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], int]:
    """A random but valid 0.x run: messages, calls (some parallel), results, bookkeeping."""
    events: list[dict[str, Any]] = []
    said: list[str] = []
    calls = 0
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "agent", "calls", "noise"]))
        n = len(events)
        if kind in ("user", "agent"):
            text = draw(_words)
            said.append(text)
            events.append({"id": n, "source": kind, "action": "message", "args": {"content": text}})
        elif kind == "noise":
            events.append(
                {
                    "id": n,
                    "source": "environment",
                    "observation": "agent_state_changed",
                    "content": "",
                    "extras": {},
                }
            )
        else:
            width = draw(st.integers(1, 3))
            response = f"resp-{n}"
            ids = []
            for k in range(width):
                call_id = f"call-{n}-{k}"
                meta = {
                    "function_name": "execute_bash",
                    "tool_call_id": call_id,
                    "model_response": {"id": response},
                    "total_calls_in_response": width,
                }
                events.append(
                    {
                        "id": len(events),
                        "source": "agent",
                        "action": "run",
                        "args": {"command": "ls", "thought": ""},
                        "tool_call_metadata": meta,
                    }
                )
                ids.append((len(events) - 1, call_id))
            for cause, call_id in ids:
                events.append(
                    {
                        "id": len(events),
                        "source": "agent",
                        "cause": cause,
                        "observation": "run",
                        "content": draw(st.text(max_size=10)),
                        "extras": {},
                        "tool_call_metadata": {"tool_call_id": call_id},
                    }
                )
            calls += width
    return events, said, calls


@settings(max_examples=60, deadline=None)
@given(run=_openhands_run())
def test_openhands_runs_keep_every_word_and_answer_every_call(
    tmp_path_factory: pytest.TempPathFactory, run: tuple[list[dict[str, Any]], list[str], int]
) -> None:
    events, said, calls = run
    path = cases.write_json(tmp_path_factory.mktemp("oh") / "t.json", events)
    conversation = load(path, "openhands").current()
    texts = [b.text for m in conversation.messages for b in m.blocks if isinstance(b, Text)]
    assert texts == said
    made = [c.id for c in conversation.tool_calls()]
    answered = [b.call_id for _, _, b in conversation.blocks() if isinstance(b, ToolResult)]
    assert len(made) == calls and sorted(made) == sorted(answered)
    for index, message in enumerate(conversation.messages):  # a result follows its call
        for block in message.blocks:
            if isinstance(block, ToolResult):
                earlier = [
                    b.id
                    for m in conversation.messages[:index]
                    for b in m.blocks
                    if isinstance(b, ToolCall)
                ]
                assert block.call_id in earlier


def test_openhands_v1_conversation_folder(tmp_path: Path) -> None:
    folder = tmp_path / "conversation"
    (folder / "events").mkdir(parents=True)
    cases.write_json(folder / "base_state.json", {"id": "c", "agent": {"llm": {"model": "gpt-5"}}})
    events = cases.openhands_v1_events()
    for index, event in reversed(list(enumerate(events))):  # written out of order on purpose
        cases.write_json(folder / "events" / f"event-{index:05d}-{event['id']}.json", event)
    for where in (folder, folder / "events"):
        assert detect(where) == "openhands"
        conversation = load(where).current()
        assert _texts(conversation, Origin.AGENT) == [cases.AGENT, cases.AGENT_END]
        assert conversation.model == "gpt-5"


_CASES: dict[str, Any] = {
    "cline": cases.cline_history,
    "swe-agent": cases.swe_agent_traj,
    "mini-swe-agent": cases.mini_swe_agent_traj,
    "openhands": cases.openhands_events,
    "gemini-cli": cases.gemini_contents,
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_format_names_a_reader_and_a_wrong_name_is_one_line(
    name: str, tmp_path: Path, cli: CliRun
) -> None:
    path = cases.write_json(tmp_path / "input.json", _CASES[name]())
    result = cli("inspect", str(path), "--format", name, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["format"] == name
    wrong = "openhands" if name != "openhands" else "swe-agent"
    result = cli("inspect", str(path), "--format", wrong)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert str(path) in result.stderr
