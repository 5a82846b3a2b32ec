"""The OpenAI Agents SDK adapter with the real SDK: `Runner.run` with a session wrapping a real
`SQLAlchemySession` on SQLite, real function tools, and the SDK's own `ScriptedModel` for
deterministic tool calls. Asserts what the model is sent and what the session stores."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("sqlalchemy")
pytest.importorskip("aiosqlite")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.extensions.memory import SQLAlchemySession
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from ipse.adapters.openai_agents import (
    HandoffSession,
    checkpoint_tool,
    hand_off_items,
    input_filter,
)
from ipse.archive import open_archive

set_tracing_disabled(True)

NOTES = {"done": ["read setup.cfg"], "open": ["bump the version"]}


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"[metadata]\nversion = 1.0  # {path}"


def _reasoning(text: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id="rs_1", type="reasoning", summary=[Summary(type="summary_text", text=text)]
    )


def _types(items: list[Any]) -> list[str]:
    return [
        str(i.get("type", "message")) + ":" + str(i.get("role", i.get("name", ""))) for i in items
    ]


def test_the_session_stores_the_handed_off_history(tmp_path: Path) -> None:
    archive = open_archive(f"sqlite:///{tmp_path / 'ipse.db'}")
    model = ScriptedModel(
        [
            [
                assistant_message("I will read the config.", item_id="msg_1"),
                function_call("read_file", {"path": "setup.cfg"}, call_id="c1"),
            ],
            [
                _reasoning("the version is 1.0"),
                assistant_message("The version is 1.0.", item_id="msg_2"),
                function_call("micro_handoff", NOTES, call_id="c2"),
            ],
            [assistant_message("Next I bump the version.", item_id="msg_3")],
            [assistant_message("Bumped.", item_id="msg_4")],
        ]
    )
    agent = Agent(
        name="dev", instructions="Work.", model=model, tools=[read_file, checkpoint_tool()]
    )

    async def scenario() -> tuple[list[Any], list[Any]]:
        inner = SQLAlchemySession.from_url(
            "s1", url=f"sqlite+aiosqlite:///{tmp_path / 'agents.db'}", create_tables=True
        )
        session = HandoffSession(inner, archive=archive)
        await Runner.run(agent, "What version is this?", session=session)
        after_first = await session.get_items()
        await Runner.run(agent, "Go on.", session=session)
        stored = await inner.get_items()
        await inner.engine.dispose()
        return after_first, stored

    after_first, stored = asyncio.run(scenario())

    # the first run's calls saw everything (the runner keeps the run's items itself)
    assert "function_call:read_file" in _types(list(model.calls[2].input))
    # stored: the user's words, the agent's words, the checkpoint call and its notes
    # (each message item stays as the model wrote it: neighbouring ones are not merged)
    # and, before the agent's turn that holds the checkpoint, the handoff's marker of what went
    assert _types(after_first) == [
        "message:user",
        "message:assistant",
        "message:user",
        "message:assistant",
        "function_call:micro_handoff",
        "function_call_output:",
        "message:assistant",
    ]
    texts = [c["text"] for i in after_first if i.get("role") == "assistant" for c in i["content"]]
    assert texts == ["I will read the config.", "The version is 1.0.", "Next I bump the version."]
    assert after_first[2]["content"][0]["text"].startswith("[ipse handoff]")
    assert after_first[5]["output"].startswith("Handoff notes")
    # the second run's model call is sent the short history, then the new input
    sent = list(model.calls[3].input)
    assert sent[: len(after_first)] == after_first
    assert sent[len(after_first)]["content"] == "Go on."
    assert _types(stored)[-2:] == ["message:user", "message:assistant"]
    assert stored[: len(after_first)] == after_first

    kinds = sorted(i.kind for i in archive.items("s1"))
    assert kinds == ["thinking", "tool"]
    archive.close()


def test_hand_off_items_is_idempotent_and_leaves_plain_histories_alone() -> None:
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "x"},
        {
            "type": "function_call",
            "call_id": "b",
            "name": "micro_handoff",
            "arguments": '{"done":[],"open":[]}',
        },
        {"type": "function_call_output", "call_id": "b", "output": "Handoff notes"},
        {"role": "user", "content": "next"},
    ]
    found = hand_off_items(items, session="s")
    assert found is not None
    out, done = found
    assert done.report.removed_calls == 1
    assert out[-1] is items[-1]
    assert hand_off_items(out, session="s") is None
    assert hand_off_items(items[:1], session="s") is None


def test_bad_notes_give_an_error_text() -> None:
    from agents.tool_context import ToolContext

    tool = checkpoint_tool()
    context = ToolContext(
        context=None, tool_name="micro_handoff", tool_call_id="c", tool_arguments="{}"
    )

    async def call() -> Any:
        return await tool.on_invoke_tool(context, '{"done": []}')

    out = asyncio.run(call())
    assert out.startswith("error: the checkpoint was not recorded") and "'open'" in out


def test_plain_runs_against_the_real_server_are_stored_as_they_are(
    llama: str, tmp_path: Path
) -> None:
    from agents import OpenAIChatCompletionsModel, SQLiteSession
    from openai import AsyncOpenAI

    async def go() -> tuple[list[Any], list[Any]]:
        client = AsyncOpenAI(base_url=f"{llama}/v1", api_key="test")
        model = OpenAIChatCompletionsModel(model="smollm2", openai_client=client)
        agent = Agent(
            name="a", instructions="Answer briefly.", model=model, tools=[checkpoint_tool()]
        )
        inner = SQLiteSession("s", str(tmp_path / "agents.db"))
        session = HandoffSession(inner, archive=False)
        await Runner.run(agent, "Say hi.", session=session)
        first = await session.get_items()
        await Runner.run(agent, "Say bye.", session=session)
        second = await inner.get_items()
        await client.close()
        return first, second

    first, second = asyncio.run(go())
    assert first[0] == {"content": "Say hi.", "role": "user"}
    assert first[1]["role"] == "assistant"
    assert second[: len(first)] == first
    assert second[len(first)] == {"content": "Say bye.", "role": "user"}


def test_a_checkpoint_with_bad_notes_does_not_hand_off(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "a"}, call_id="c1")],
            [function_call("micro_handoff", {"done": []}, call_id="c2")],
            [assistant_message("I could not record it.", item_id="msg_1")],
        ]
    )
    agent = Agent(name="dev", model=model, tools=[read_file, checkpoint_tool()])

    async def scenario() -> list[Any]:
        inner = SQLAlchemySession.from_url(
            "s", url=f"sqlite+aiosqlite:///{tmp_path / 'agents.db'}", create_tables=True
        )
        session = HandoffSession(inner, archive=False)
        await Runner.run(agent, "hi", session=session)
        assert session.last is None
        stored = await inner.get_items()
        await inner.engine.dispose()
        return stored

    stored = asyncio.run(scenario())
    assert "function_call:read_file" in _types(stored)


def test_the_input_filter_hands_off_within_the_run() -> None:
    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "a"}, call_id="c1")],
            [
                _reasoning("read"),
                assistant_message("Version 1.0.", item_id="msg_1"),
                function_call("micro_handoff", NOTES, call_id="c2"),
            ],
            [assistant_message("Done.", item_id="msg_2")],
        ]
    )
    agent = Agent(name="dev", model=model, tools=[read_file, checkpoint_tool()])
    config = RunConfig(call_model_input_filter=input_filter())
    result = asyncio.run(Runner.run(agent, "What version?", run_config=config))
    assert result.final_output == "Done."
    assert "function_call:read_file" in _types(list(model.calls[1].input))
    third = list(model.calls[2].input)
    assert _types(third) == [
        "message:user",
        "message:user",  # the handoff's marker
        "message:assistant",
        "function_call:micro_handoff",
        "function_call_output:",
    ]
