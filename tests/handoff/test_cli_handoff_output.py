"""Where `ipse handoff` writes: a file, stdout, never a folder; and a body the API accepts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLE_SESSION, CliResult, run_cli

SESSION = EXAMPLE_SESSION


def _ipse(*args: str, home: Path) -> CliResult:
    return run_cli(*args, env={"IPSE_HOME": str(home)})


def test_claude_code_output_carries_model_and_max_tokens(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = _ipse("handoff", str(SESSION), "--at", "end", "-o", str(out), home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    body = json.loads(out.read_text())
    assert body["max_tokens"] == 8192
    assert body["model"].startswith("claude")
    again = _ipse(
        "handoff",
        str(out),
        "--at",
        "end",
        "-o",
        str(tmp_path / "again.json"),
        "--max-tokens",
        "100",
        home=tmp_path / "h",
    )
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text()) == body  # its own value is kept


def test_dash_writes_the_body_to_stdout_and_the_report_to_stderr(tmp_path: Path) -> None:
    result = _ipse(
        "handoff", str(SESSION), "--at", "end", "-o", "-", "--no-archive", home=tmp_path / "h"
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["messages"][0]["role"] == "user"
    assert "authored text preserved" in result.stderr
    assert not (Path.cwd() / "-").exists()


def test_folder_as_output_is_refused_before_anything_is_archived(tmp_path: Path) -> None:
    home = tmp_path / "h"
    result = _ipse("handoff", str(SESSION), "--at", "end", "-o", str(tmp_path), home=home)
    assert result.returncode == 2
    assert "is a folder" in result.stderr and "Traceback" not in result.stderr
    assert not (home / "ipse.db").exists()


def test_dash_with_json_is_a_usage_error(tmp_path: Path) -> None:
    result = _ipse("handoff", str(SESSION), "--at", "end", "-o", "-", "--json", home=tmp_path / "h")
    assert result.returncode == 2
    assert "stdout" in result.stderr


def test_verify_at_checkpoint_with_a_renamed_checkpoint_tool(tmp_path: Path) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "do the work"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Running the tests."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "pytest"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "All green; saving notes."},
                    {"type": "tool_use", "id": "t2", "name": "save_notes", "input": {"done": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "noted"}],
            },
            {"role": "assistant", "content": "Next I refactor."},
        ],
    }
    before = tmp_path / "before.json"
    before.write_text(json.dumps(body))
    after = tmp_path / "after.json"
    home = tmp_path / "h"
    made = _ipse(
        "handoff",
        str(before),
        "--checkpoint-tool",
        "save_notes",
        "-o",
        str(after),
        "--no-archive",
        home=home,
    )
    assert made.returncode == 0, made.stderr
    checked = _ipse(
        "verify",
        str(before),
        str(after),
        "--at",
        "checkpoint",
        "--checkpoint-tool",
        "save_notes",
        home=home,
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout
    missing = _ipse("verify", str(before), str(after), "--at", "checkpoint", home=home)
    assert missing.returncode == 2  # no micro_handoff call in BEFORE
