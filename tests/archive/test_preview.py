"""What ``archive list`` previews for each dialect's calls: the command a Codex ``exec_command``
ran (JSON arguments), a shell argv, a ``custom_tool_call``'s input, and an output when the call
itself is not there."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.archive._base import preview
from tests.conftest import run_cli


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


def _output(kind: str, call_id: str, output: str) -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": output}


BODY = {
    "model": "gpt-5",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        _call("exec_command", {"cmd": "ls -la", "workdir": "/repo"}, "call_1"),
        _output("function_call_output", "call_1", "total 3\nREADME.md"),
        _call("shell", {"command": ["bash", "-lc", "git status"]}, "call_2"),
        _output("function_call_output", "call_2", "clean"),
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch",
            "call_id": "call_3",
        },
        _output("custom_tool_call_output", "call_3", "Done"),
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ],
}


def test_archive_list_previews_what_a_codex_call_ran(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps(BODY))
    done = run_cli("handoff", str(body), "--at", "end", "-o", str(tmp_path / "out.json"), "--json")
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout)["session"]
    listed = run_cli("archive", "list", session, "--show-values", "--json")
    assert listed.returncode == 0, listed.stderr
    previews = {i["id"]: i["preview"] for i in json.loads(listed.stdout)["items"]}
    assert previews == {
        "call_1": "ls -la",
        "call_2": "bash -lc git status",
        "call_3": "*** Begin Patch *** Add File: a.txt +hi *** End Patch",
    }
    hidden = run_cli("archive", "list", session, "--json")
    assert all(i["preview"] for i in json.loads(hidden.stdout)["items"])  # a length and hash


@dataclass(frozen=True)
class Removed:
    kind: str
    id: str
    tool: str
    call: dict[str, Any] | None
    result: dict[str, Any] | None
    message: int = 0


def test_an_output_whose_call_is_not_there_previews_the_output() -> None:
    for result in (
        _output("function_call_output", "c", "total 3\nREADME.md"),
        _output("custom_tool_call_output", "c", "total 3\nREADME.md"),
        {"role": "tool", "tool_call_id": "c", "content": "total 3\nREADME.md"},
        {
            "type": "tool_result",
            "tool_use_id": "c",
            "content": [{"type": "text", "text": "total 3"}],
        },
    ):
        assert preview(Removed("tool", "c", "exec_command", None, result)).startswith("total 3")


def test_chat_completions_arguments_preview_their_first_text() -> None:
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q"})},
    }
    assert preview(Removed("tool", "c", "bash", call, None)) == "pytest -q"
    odd = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}
    assert preview(Removed("tool", "c", "bash", odd, None)) == "{not json"
