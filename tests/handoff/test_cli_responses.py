"""``ipse handoff`` and ``ipse verify`` on OpenAI Responses bodies and Codex rollouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ipse.cli.main import cli
from ipse.transcript import load
from ipse.transcript._codec import codec
from ipse.transcript._model import Thinking, ToolCall, ToolResult
from tests.transcript.responses import (
    assistant_message,
    custom_call,
    function_call,
    function_output,
    reasoning,
    user_message,
)

BODY: dict[str, Any] = {
    "model": "gpt-5",
    "instructions": "You are a careful engineer.",
    "input": [
        user_message("Find the failing test."),
        reasoning("Run the suite first."),
        assistant_message("Running the tests."),
        function_call("call_1", "shell", '{"cmd":"pytest -q"}'),
        function_output("call_1", "1 failed: test_parse"),
        custom_call("call_2"),
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": "patched"},
        assistant_message("test_parse failed; I patched the parser."),
        user_message("Now run it again."),
        reasoning(None),
        function_call("call_3", "shell", '{"cmd":"pytest -q"}'),
    ],
    "tools": [{"type": "function", "name": "shell", "parameters": {}}],
    "store": False,
}


def run(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_handoff_writes_a_responses_body(tmp_path: Path) -> None:
    source = tmp_path / "body.json"
    source.write_bytes(orjson.dumps(BODY))
    out = tmp_path / "out.json"
    result = run(["handoff", str(source), "--at", "now", "-o", str(out), "--json", "--no-archive"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["authored_preserved"] is True
    assert document["removed"]["tool_calls"] == 2
    body = orjson.loads(out.read_bytes())
    assert set(body) == {"model", "instructions", "input", "tools", "store"}
    items = body["input"]
    # the pending exchange at the end stays byte for byte; before it only words remain
    assert items[-2:] == BODY["input"][-2:]
    assert [i.get("type", "message") for i in items[:-2]] == ["message"] * (len(items) - 2)
    # every message item stays as written: neighbouring ones are not merged, parts not joined;
    # the marker at the cut says what went and holds the ledger of it
    kept = [BODY["input"][i] for i in (0, 2, 7, 8)]
    assert items[:-3] == kept
    marker = items[-3]["content"][0]["text"]
    assert (
        marker.startswith("[ipse handoff] This handoff removed") and "cannot be recalled" in marker
    )
    assert "- `pytest -q` [call_1]" in marker
    assert document["marker"]["text"] == marker and document["ledger"]["calls"] == 2
    assert run(["verify", str(source), str(out)]).exit_code == 0


def test_handoff_of_a_codex_rollout(shared_data: Path, tmp_path: Path) -> None:
    for path in sorted((shared_data / "codex").glob("*.jsonl")):
        out = tmp_path / f"{path.stem}.json"
        result = run(["handoff", str(path), "--at", "now", "-o", str(out), "--json"])
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["authored_preserved"] is True
        assert document["after"]["tokens"] < document["before"]["tokens"]
        body = orjson.loads(out.read_bytes())
        assert body["model"].startswith("gpt-") and isinstance(body["instructions"], str)
        after = load(out).current()
        assert after.dialect == "openai-responses"
        before = load(path).current()
        at = document["cut"]["at"]
        assert document["cut"]["untouched_messages"] == len(before.messages) - at
        # the untouched part is the same items, byte for byte; before it only words remain
        tail = [i for m in before.messages[at:] for i in codec(before.dialect).write_message(m)]
        split = len(body["input"]) - len(tail)
        assert orjson.dumps(body["input"][split:]) == orjson.dumps(tail)
        rewritten = body["input"][:split]
        traffic = {"reasoning", "web_search_call", "function_call", "function_call_output"}
        assert "message" in {i["type"] for i in rewritten}
        assert not {i["type"] for i in rewritten} & traffic  # a "compaction" item stays
        assert not any(
            isinstance(b, ToolCall | ToolResult | Thinking)
            for m in codec(after.dialect).read_body({"input": rewritten}).messages
            for b in m.blocks
        )
        assert run(["verify", str(path), str(out)]).exit_code == 0
