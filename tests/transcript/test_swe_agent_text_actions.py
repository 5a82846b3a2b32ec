"""SWE-agent trajectories whose actions are text (no function calls): each action is a tool
call and the environment's answer (a ``user`` item) its result, so a handoff removes them and
keeps the task statement, the demonstration and the agent's words."""

from __future__ import annotations

import json
from pathlib import Path

from ipse.transcript import Text, ToolCall, ToolResult, detect, read_conversation
from ipse.transcript._model import Origin
from tests.conftest import CliRun
from tests.transcript import harness_cases as cases


def _traj(tmp_path: Path) -> Path:
    return cases.write_json(tmp_path / "repo__issue-1.traj", cases.swe_agent_classic_traj())


def test_actions_are_calls_and_observations_their_results(tmp_path: Path, cli: CliRun) -> None:
    path = _traj(tmp_path)
    assert detect(path) == "swe-agent"
    conversation = read_conversation(path)
    calls = [b for m in conversation.messages for b in m.blocks if isinstance(b, ToolCall)]
    results = [b for m in conversation.messages for b in m.blocks if isinstance(b, ToolResult)]
    assert [c.name for c in calls] == ["find_file", "open", "edit", "submit"]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert [r.content for r in results] == list(cases.CLASSIC_OBSERVATIONS)
    texts = [
        (b.origin, b.text) for m in conversation.messages for b in m.blocks if isinstance(b, Text)
    ]
    human = [t for origin, t in texts if origin is Origin.HUMAN]
    assert human == [cases.CLASSIC_TASK]  # the task statement, and no observation
    assert [t for origin, t in texts if origin is Origin.AGENT] == list(cases.CLASSIC_THOUGHTS)
    demo = [t for origin, t in texts if origin is Origin.HARNESS]
    assert len(demo) == 1 and "DEMONSTRATION" in demo[0]

    inspected = json.loads(cli("inspect", str(path), "--json").stdout)
    assert inspected["turns"] == 1 and inspected["tool_calls"] == 4


def test_handoff_removes_observations_and_keeps_authored_text(tmp_path: Path, cli: CliRun) -> None:
    path = _traj(tmp_path)
    out = tmp_path / "out.json"
    done = cli("handoff", str(path), "--at", "end", "-o", str(out), "--model", "gpt-4o")
    assert done.returncode == 0, done.stderr
    written = out.read_text()
    for observation in cases.CLASSIC_OBSERVATIONS:
        assert json.dumps(observation)[1:-1] not in written
    # the calls are gone; the handoff's marker names what they did, a line each, in its ledger
    messages = json.loads(written)["messages"]
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in messages)
    unmarked = json.dumps([m for m in messages if "[ipse handoff]" not in str(m["content"])])
    for action in cases.CLASSIC_ACTIONS[:3]:
        assert json.dumps(action)[1:-1] not in unmarked
    for words in (cases.CLASSIC_TASK, *cases.CLASSIC_THOUGHTS):
        assert json.dumps(words)[1:-1] in written
    assert cli("verify", str(path), str(out)).returncode == 0


def test_function_calling_trajectories_are_read_as_before(tmp_path: Path) -> None:
    path = cases.write_json(tmp_path / "fc.traj", cases.swe_agent_traj())
    conversation = read_conversation(path)
    calls = [b for m in conversation.messages for b in m.blocks if isinstance(b, ToolCall)]
    assert [c.id for c in calls] == ["call_1"]
