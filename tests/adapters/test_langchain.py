"""The LangChain adapter with the real framework: `create_agent`, a real checkpointer (in memory
and SQLite), real tools, and LangChain's own fake chat model scripted for deterministic tool
calls. Asserts what reaches the model and what the checkpointer stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from ipse.adapters.langchain import (
    HandoffMiddleware,
    TwinMiddleware,
    checkpoint_tool,
    from_conversation,
    to_conversation,
)
from ipse.archive import open_archive
from ipse.twin import TwinConfig, open_store

NOTES = {"done": ["read setup.cfg"], "open": ["bump the version"]}


class Scripted(GenericFakeChatModel):
    """The fake chat model, recording every list of messages it is called with."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    systems: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.systems.append(messages[0].content if messages[0].type == "system" else None)
        self.seen.append([m for m in messages if m.type != "system"])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"[metadata]\nname = demo\nversion = 1.0  # from {path}"


def _call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _script() -> list[AIMessage]:
    return [
        AIMessage(
            "I will read the config.", tool_calls=[_call("read_file", {"path": "setup.cfg"}, "c1")]
        ),
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "version is 1.0", "signature": "sig"},
                {"type": "text", "text": "The version is 1.0."},
            ],
            tool_calls=[_call("micro_handoff", NOTES, "c2")],
        ),
        AIMessage("Next I bump the version."),
        AIMessage("Bumped."),
    ]


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    sqlite_saver = pytest.importorskip("langgraph.checkpoint.sqlite")
    conn = sqlite3.connect(tmp_path / "graph.db", check_same_thread=False)
    try:
        yield sqlite_saver.SqliteSaver(conn)
    finally:
        conn.close()


def _texts(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


def test_a_checkpoint_hands_the_stored_history_off(saver: Any, tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    model = Scripted(messages=iter(_script()))
    agent = create_agent(
        model,
        tools=[read_file],
        middleware=[HandoffMiddleware(archive=archive)],
        checkpointer=saver,
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage("What version is this?")]}, config)

    # the second call saw the whole tool traffic; the third the handed-off history
    assert [m.type for m in model.seen[1]] == [
        "human",
        "ai",
        "tool",
    ]
    third = model.seen[2]
    assert [m.type for m in third] == ["human", "ai", "tool"]
    # the handoff's marker (what went, and the ledger of it), then the human's question
    marker, question = third[0].text.rsplit("\n\n", 1)
    assert question == "What version is this?" and marker.startswith("[ipse handoff]")
    assert "- setup.cfg [c1]" in marker
    assert third[1].content == [
        {"type": "text", "text": "I will read the config.\n\nThe version is 1.0."}
    ]
    assert isinstance(third[1], AIMessage)
    assert [c["name"] for c in third[1].tool_calls] == ["micro_handoff"]
    assert third[1].tool_calls[0]["args"] == NOTES
    assert isinstance(third[2], ToolMessage) and third[2].tool_call_id == "c2"
    assert third[2].text.startswith("Handoff notes")

    stored = agent.get_state(config).values["messages"]
    assert _texts(stored) == [*_texts(third), ("ai", "Next I bump the version.")]
    # the rewritten assistant message keeps the id of the message it came from
    first_ai_id = model.seen[1][1].id
    assert stored[1].id == first_ai_id

    items = archive.items("t1")
    assert sorted(i.kind for i in items) == ["thinking", "tool"]
    tool_item = next(i for i in items if i.kind == "tool")
    recalled = archive.recall(tool_item.id, "t1")
    assert b"version = 1.0" in (recalled.result or b"")

    # the next turn appends to the short history; the same checkpoint is not handed off again
    agent.invoke({"messages": [HumanMessage("Go on.")]}, config)
    again = agent.get_state(config).values["messages"]
    assert [m.id for m in again[:4]] == [m.id for m in stored]
    assert _texts(again[4:]) == [("human", "Go on."), ("ai", "Bumped.")]
    assert _texts(model.seen[3]) == _texts(again[:5])
    archive.close()


def test_bad_notes_are_an_error_result_and_no_checkpoint(tmp_path: Path) -> None:
    model = Scripted(
        messages=iter(
            [
                AIMessage("", tool_calls=[_call("read_file", {"path": "a"}, "c1")]),
                AIMessage("", tool_calls=[_call("micro_handoff", {"done": []}, "c2")]),
                AIMessage("ok"),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[read_file],
        middleware=[HandoffMiddleware(archive=False)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("hi")]}, config)
    last = model.seen[-1]
    assert [m.type for m in last] == ["human", "ai", "tool", "ai", "tool"]
    assert isinstance(last[-1], ToolMessage) and last[-1].status == "error"
    assert "missing field 'open'" in last[-1].text


def test_the_checkpoint_tool_renders_the_notes() -> None:
    rendered = checkpoint_tool().invoke(NOTES)
    assert rendered.splitlines()[0] == "Handoff notes"
    assert "- bump the version" in rendered


def test_round_trip_keeps_every_message_object() -> None:
    messages: list[BaseMessage] = [
        HumanMessage(content=[{"type": "text", "text": "look"}, {"type": "image", "url": "x"}]),
        AIMessage(
            content=[
                {"type": "reasoning", "reasoning": "r"},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}},
            ],
            tool_calls=[_call("read_file", {"path": "a"}, "c1")],
        ),
        ToolMessage("text", tool_call_id="c1"),
        AIMessage("done"),
    ]
    conversation = to_conversation(messages)
    back = from_conversation(conversation, conversation, messages)
    assert all(a is b for a, b in zip(back, messages, strict=True))
    kinds = [b.kind for m in conversation.messages for b in m.blocks]
    assert kinds == ["text", "other", "thinking", "tool_call", "tool_result", "text"]


def test_twin_rehydrates_once_per_thread_and_writes_on_transitions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twins.db'}"
    store = open_store(url)
    role = "You are Ada, the support twin for Acme."
    model = Scripted(
        messages=iter(
            [
                AIMessage("", tool_calls=[_call("establish_fact", {"text": "Plan is Pro"}, "f1")]),
                AIMessage("Noted: you are on Pro."),
                AIMessage("Welcome back."),
            ]
        )
    )
    twin = TwinMiddleware(url, "ada", TwinConfig(role=role))
    agent = create_agent(
        model, middleware=[twin], system_prompt="Be brief.", checkpointer=InMemorySaver()
    )
    agent.invoke(
        {"messages": [HumanMessage("I am on the Pro plan.")]}, {"configurable": {"thread_id": "a"}}
    )
    # cold start: the role alone, before the agent's own prompt, the same on both calls
    assert model.systems[0] == model.systems[1] == role + "\n\nBe brief."
    latest = store.latest("ada")
    assert latest is not None and [f.text for f in latest.state.counterparty.facts] == [
        "Plan is Pro"
    ]
    tool_result = model.seen[1][-1]
    assert isinstance(tool_result, ToolMessage) and tool_result.text.startswith(
        "ok: establish_fact"
    )

    # a fresh thread rehydrates the snapshot
    agent.invoke({"messages": [HumanMessage("Hi again")]}, {"configurable": {"thread_id": "b"}})
    system = model.systems[2]
    assert system.startswith(role) and "- Plan is Pro" in system
    assert "already under way" in system
    store.close()


def test_a_handed_off_history_reaches_the_real_server(llama: str) -> None:
    chat_anthropic = pytest.importorskip("langchain_anthropic")
    model = chat_anthropic.ChatAnthropic(
        model="smollm2", base_url=llama, api_key="test", max_tokens=16, temperature=0
    )
    agent = create_agent(
        model,
        tools=[read_file],
        middleware=[HandoffMiddleware(archive=False)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "real"}}
    earlier: list[Any] = [
        HumanMessage("What version is this?"),
        AIMessage("I will read it.", tool_calls=[_call("read_file", {"path": "a"}, "c1")]),
        ToolMessage("version = 1.0", tool_call_id="c1", name="read_file"),
        AIMessage("It is 1.0.", tool_calls=[_call("micro_handoff", NOTES, "c2")]),
        ToolMessage(checkpoint_tool().invoke(NOTES), tool_call_id="c2", name="micro_handoff"),
    ]
    out = agent.invoke({"messages": earlier}, config)
    stored = out["messages"]
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"]
    assert stored[1].text == "I will read it.\n\nIt is 1.0."
    assert isinstance(stored[3], AIMessage) and stored[3].text  # the server answered
    assert stored[3].response_metadata.get("model_name") or stored[3].usage_metadata


def test_a_later_checkpoint_hands_off_again_and_keeps_the_earlier_notes() -> None:
    later = {"done": ["bumped"], "open": []}
    model = Scripted(
        messages=iter(
            [
                *_script()[:3],
                AIMessage("", tool_calls=[_call("read_file", {"path": "b"}, "c3")]),
                AIMessage("Read b.", tool_calls=[_call("micro_handoff", later, "c4")]),
                AIMessage("All done."),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[read_file],
        middleware=[HandoffMiddleware(archive=False)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("What version is this?")]}, config)
    agent.invoke({"messages": [HumanMessage("Now read b.")]}, config)
    stored = agent.get_state(config).values["messages"]
    calls = [c["name"] for m in stored if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["micro_handoff", "micro_handoff"]
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai", "human", "ai", "tool", "ai"]
    assert _texts(model.seen[-1]) == _texts(stored[:-1])


def test_async_invocation_hands_off_too(tmp_path: Path) -> None:
    import asyncio

    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    model = Scripted(messages=iter(_script()))
    agent = create_agent(
        model,
        tools=[read_file],
        middleware=[HandoffMiddleware(archive=archive)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "a"}}
    asyncio.run(agent.ainvoke({"messages": [HumanMessage("What version is this?")]}, config))
    assert [m.type for m in model.seen[2]] == ["human", "ai", "tool"]
    assert len(archive.items("a")) == 2
    archive.close()


def test_the_twin_prompt_is_rendered_again_after_a_handoff(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twins.db'}"
    model = Scripted(
        messages=iter(
            [
                AIMessage("", tool_calls=[_call("establish_fact", {"text": "Uses Rust"}, "f1")]),
                AIMessage("", tool_calls=[_call("micro_handoff", NOTES, "c2")]),
                AIMessage("ok"),
            ]
        )
    )
    agent = create_agent(
        model,
        middleware=[
            HandoffMiddleware(archive=False),
            TwinMiddleware(url, "t", TwinConfig(role="Role.")),
        ],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [HumanMessage("I use Rust.")]}, {"configurable": {"thread_id": "x"}})
    first, second, third = model.systems
    assert first == second == "Role.\n"  # cold start, stable until the handoff
    assert "- Uses Rust" in third  # the establish_fact call is gone from the history, not the fact
    assert [m.type for m in model.seen[2]] == ["human", "ai", "tool"]


def test_what_chat_anthropic_sends_after_a_handoff() -> None:
    chat_anthropic = pytest.importorskip("langchain_anthropic")
    from tests.support.anthropic_upstream import anthropic_upstream

    earlier: list[Any] = [
        HumanMessage("What version is this?"),
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "read it", "signature": "sig"},
                {"type": "text", "text": "I will read it."},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}},
            ],
            tool_calls=[_call("read_file", {"path": "a"}, "c1")],
        ),
        ToolMessage("version = 1.0", tool_call_id="c1", name="read_file"),
        AIMessage(
            content=[
                {"type": "text", "text": "It is 1.0."},
                {"type": "tool_use", "id": "c2", "name": "micro_handoff", "input": NOTES},
            ],
            tool_calls=[_call("micro_handoff", NOTES, "c2")],
        ),
        ToolMessage(checkpoint_tool().invoke(NOTES), tool_call_id="c2", name="micro_handoff"),
    ]
    with anthropic_upstream(["Next."]) as upstream:
        model = chat_anthropic.ChatAnthropic(
            model="claude-sonnet-4-6", base_url=upstream.url, api_key="test", max_tokens=64
        )
        agent = create_agent(
            model,
            tools=[read_file],
            middleware=[HandoffMiddleware(archive=False)],
            checkpointer=InMemorySaver(),
        )
        agent.invoke({"messages": earlier}, {"configurable": {"thread_id": "w"}})
        (body,) = upstream.messages_requests()
    sent = body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assistant = sent[1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use"]
    assert assistant[0]["text"] == "I will read it.\n\nIt is 1.0."
    assert assistant[1]["name"] == "micro_handoff" and assistant[1]["input"] == NOTES
    assert sent[2]["content"][0]["type"] == "tool_result"
    assert sent[2]["content"][0]["tool_use_id"] == "c2"
