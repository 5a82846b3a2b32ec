"""One reader, one verdict: a malformed request body gets the same answer from every command
that reads it (inspect, handoff, prefix, lint, verify, report), pretty-printed or on one line.

Three shapes used to get different ones: a message with no content (handoff alone refused it,
though stripping repairs it by construction), a message with no role (prefix and lint read it),
and a tool result whose call is not in the body (prefix, lint and report read it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

USER = {"role": "user", "content": "hi"}
AGAIN = {"role": "user", "content": "again"}


def _anthropic(*messages: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [USER, *messages]}


def _chat(*messages: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": [USER, *messages]}


# name -> (body, the exit code every command gives, what its error says)
SHAPES: dict[str, tuple[dict[str, Any], int, str]] = {
    "content null": (_anthropic({"role": "assistant", "content": None}, AGAIN), 0, ""),
    "content missing": (_anthropic({"role": "assistant"}, AGAIN), 0, ""),
    "no role": (_anthropic({"content": "hello"}, AGAIN), 2, "a message needs a string 'role'"),
    "result without its call": (
        _anthropic(
            {"role": "assistant", "content": [{"type": "tool_use", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
        ),
        2,
        "tool result 'x' has no matching tool call",
    ),
    "chat: no role": (_chat({"content": "hello"}, AGAIN), 2, "a message needs a string 'role'"),
    "chat: result without its call": (
        _chat(
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "zz", "content": "done"},
            AGAIN,
        ),
        2,
        "tool result 'zz' has no matching tool call",
    ),
}


def _commands(body: Path, out: Path) -> dict[str, tuple[str, ...]]:
    return {
        "inspect": ("inspect", str(body)),
        "handoff": ("handoff", str(body), "--at", "end", "--json"),
        "prefix": ("prefix", str(body)),
        "lint": ("lint", str(body)),
        "verify": ("verify", str(body), str(body)),
        "report": ("report", str(body), "-o", str(out)),
    }


@pytest.mark.parametrize("one_line", [False, True], ids=["indented", "one line"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_command_gives_a_malformed_body_the_same_verdict(
    tmp_path: Path, shape: str, one_line: bool
) -> None:
    body, code, message = SHAPES[shape]
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body) if one_line else json.dumps(body, indent=2))
    verdicts = {}
    for name, args in _commands(path, tmp_path / "report.html").items():
        done = run_cli(*args)
        verdicts[name] = (done.returncode, message in done.stderr)
    assert verdicts == dict.fromkeys(verdicts, (code, True))
