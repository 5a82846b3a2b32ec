"""``ipse handoff``, ``ipse verify``, ``ipse recall`` and ``ipse archive list`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from ipse.handoff._measure import MEASURE_KEYS
from ipse.transcript import load
from ipse.transcript._model import ToolCall, ToolResult
from tests.conftest import BIG_SESSION, OPENAI_TRAJ, SHARED, CliResult, run_cli

SESSION_ID = "4d5611e5-241a-462a-8d15-5122611a9569"
KEY = f"session:{SESSION_ID}"  # the key every part of ipse files this session under


def run(args: list[str]) -> CliResult:
    return run_cli(*args)


@SHARED
def test_handoff_json_document(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run(["handoff", str(BIG_SESSION), "--at", "now", "-o", str(out), "--json"])
    assert result.returncode == 0, result.stdout
    document = json.loads(result.stdout)
    assert set(document) >= {
        "before",
        "after",
        "saved_tokens_pct",
        "authored_preserved",
        "narration_coverage",
        "archived",
    }
    assert set(document["before"]) == set(document["after"]) == set(MEASURE_KEYS)
    assert document["authored_preserved"] is True
    assert document["before"]["authored_chars"] == document["after"]["authored_chars"]
    assert document["after"]["bytes"] == out.stat().st_size
    assert (
        document["archived"] == document["removed"]["tool_calls"] + document["removed"]["thinking"]
    )
    assert 0.0 <= document["narration_coverage"] <= 1.0
    body = json.loads(out.read_bytes())
    assert set(body) == {"model", "max_tokens", "messages"}


@SHARED
def test_recall_gives_back_byte_equal_originals(tmp_path: Path) -> None:
    out = str(tmp_path / "out.json")
    assert run(["handoff", str(BIG_SESSION), "--at", "now", "-o", out, "--json"]).returncode == 0
    conversation = load(BIG_SESSION).current()
    results = {b.call_id: b.raw for _, _, b in conversation.blocks() if isinstance(b, ToolResult)}
    calls = [b for _, _, b in conversation.blocks() if isinstance(b, ToolCall)]
    assert calls
    for call in calls[:: max(1, len(calls) // 12)]:
        recalled = run(["recall", call.id])
        assert recalled.returncode == 0
        lines = recalled.stdout_bytes.split(b"\n")
        assert lines[0] == orjson.dumps(call.raw)
        if call.id in results:
            assert lines[1] == orjson.dumps(results[call.id])
            assert orjson.loads(lines[1]) == results[call.id]
    as_json = json.loads(run(["recall", calls[0].id, "--json"]).stdout)
    assert as_json["call"] == calls[0].raw and as_json["session"] == KEY


@SHARED
def test_archive_list(tmp_path: Path) -> None:
    run(["handoff", str(BIG_SESSION), "--at", "now", "-o", str(tmp_path / "out.json"), "--json"])
    listed = json.loads(run(["archive", "list", KEY, "--json"]).stdout)
    assert listed["items"] and {"id", "tool", "preview", "size"} <= set(listed["items"][0])
    sessions = json.loads(run(["archive", "list", "--json"]).stdout)
    assert sessions["sessions"] == [{"session": KEY, "items": len(listed["items"])}]
    assert "Bash" in run(["archive", "list", KEY]).stdout


@SHARED
def test_handoff_twice_archives_once(tmp_path: Path) -> None:
    args = ["handoff", str(BIG_SESSION), "--at", "now", "-o", str(tmp_path / "o.json"), "--json"]
    first = json.loads(run(args).stdout)
    second = json.loads(run(args).stdout)
    assert first["archived"] > 0 and second["archived"] == 0


@SHARED
def test_without_output_a_pipe_gets_the_body_and_json_is_a_dry_run(tmp_path: Path) -> None:
    """No -o: the body is the output when piped; --json alone writes and archives nothing."""
    piped = run(["handoff", str(BIG_SESSION), "--at", "now"])
    assert piped.returncode == 0, piped.stderr
    body = orjson.loads(piped.stdout)
    assert set(body) == {"model", "max_tokens", "messages"}
    assert "tokens" in piped.stderr  # the measurement went to stderr
    listed = json.loads(run(["archive", "list", "--json"]).stdout)
    assert listed["sessions"] == [{"session": KEY, "items": listed["sessions"][0]["items"]}]
    home = Path(__import__("os").environ["IPSE_HOME"])
    (home / "ipse.db").unlink()
    dry = run(["handoff", str(BIG_SESSION), "--at", "now", "--json"])
    document = json.loads(dry.stdout)
    assert document["dry_run"] is True and document["archived"] == 0
    assert "dry run" in dry.stderr
    assert not (home / "ipse.db").exists()


@SHARED
def test_openai_trajectory_session_id_is_a_content_hash(tmp_path: Path) -> None:
    out = tmp_path / "traj.json"
    result = run(["handoff", str(OPENAI_TRAJ), "--at", "now", "-o", str(out), "--json"])
    document = json.loads(result.stdout)
    assert document["session"].startswith("sha256-")
    assert document["carried_problems"] == []  # the 'exit' record is no chat message
    body = json.loads(out.read_text())
    assert body["model"] == "deepseek/deepseek-chat" and "info" not in body
    verified = run(["verify", str(OPENAI_TRAJ), str(out), "--json"])
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True


@SHARED
def test_human_table_and_verify(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run(["handoff", str(BIG_SESSION), "--at", "now", "-o", str(out), "--no-archive"])
    assert "authored characters" in result.stdout and "tokens" in result.stdout
    assert run(["verify", str(BIG_SESSION), str(out)]).returncode == 0


@SHARED
def test_verify_exits_1_when_a_word_is_lost(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run(["handoff", str(BIG_SESSION), "--at", "now", "-o", str(out), "--no-archive"])
    body = json.loads(out.read_bytes())
    message = body["messages"][1]
    block = message["content"][0] if isinstance(message["content"], list) else None
    if block is not None:
        block["text"] = block["text"].replace("e", "E", 1)
    else:
        message["content"] = message["content"].replace("e", "E", 1)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(body))
    result = run(["verify", str(BIG_SESSION), str(damaged)])
    assert result.returncode == 1


@pytest.mark.parametrize(
    "args", [["handoff"], ["verify"], ["recall"], ["archive"], ["archive", "list"]]
)
def test_help_has_an_example(args: list[str]) -> None:
    result = run([*args, "--help"])
    assert result.returncode == 0 and "Examples:" in result.stdout


def test_micro_handoff_prints_tool_prompt_and_notes(tmp_path: Path) -> None:
    tool = json.loads(run(["micro-handoff", "tool", "openai-chat"]).stdout)
    assert tool["function"]["name"] == "micro_handoff"
    assert json.loads(run(["micro-handoff", "tool"]).stdout)["name"] == "micro_handoff"
    assert "Before each tool call" in run(["micro-handoff", "prompt"]).stdout
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"done": ["a"], "open": ["b"]}))
    assert (
        run(["micro-handoff", "render-notes", str(notes)]).stdout
        == "Handoff notes\nDone:\n- a\nOpen:\n- b\n"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["--print-tool", "openai-chat"], ["tool", "openai-chat"]),
        (["--print-tool"], ["tool"]),
        (["--print-prompt"], ["prompt"]),
        (["--render-notes", "NOTES"], ["render-notes", "NOTES"]),
    ],
)
def test_handoff_print_options_are_deprecated_aliases(
    tmp_path: Path, old: list[str], new: list[str]
) -> None:
    """The old options print exactly what the new commands do, after one notice on stderr,
    and no longer show in the help of a command that hands off."""
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"done": ["a"], "open": ["b"]}))
    old = [str(notes) if a == "NOTES" else a for a in old]
    new = [str(notes) if a == "NOTES" else a for a in new]
    before, after = run(["handoff", *old]), run(["micro-handoff", *new])
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout and before.stdout
    assert after.stderr == ""
    assert before.stderr.count("\n") == 1
    assert before.stderr.startswith(f"ipse: warning: ipse handoff {old[0]} is deprecated; use `")
    assert "ipse micro-handoff" in before.stderr
    assert old[0] not in run(["handoff", "--help"]).stdout


def test_micro_handoff_help_has_examples_and_bad_notes_name_the_file(tmp_path: Path) -> None:
    assert "Examples:" in run(["micro-handoff", "--help"]).stdout
    assert "micro-handoff" in run(["--help"]).stdout
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"done": "not a list"}))
    result = run(["micro-handoff", "render-notes", str(notes)])
    assert result.returncode == 2 and str(notes) in result.stderr


def test_recall_unknown_id_exits_2() -> None:
    result = run(["recall", "nope"])
    assert result.returncode == 2
    assert result.stderr.startswith("ipse: error: ") and result.stderr.count("\n") == 1
