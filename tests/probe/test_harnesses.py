"""The probe on small sessions of other agent CLIs built here: a Codex rollout that compacts
(its replayed history and summary are the compaction-summary strategy), a Cline task history
(file tools by name), a checkpoint call (the notes, kept by ipse, gone without them), a
checkpoint Codex's code mode makes through ``exec``, and a checkpoint that ends the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipse._tokens import CharCounter
from ipse.probe import probe_session, timeline
from ipse.probe._facts import FactIndex
from ipse.transcript import load
from tests.conftest import run_cli
from tests.probe.build import assistant, call, result, text, user, write_session

PATCH = "*** Begin Patch\n*** Add File: crates/core/src/cache.rs\n+pub fn hit() {}\n*** End Patch"


def _rec(kind: str, payload: dict[str, Any], n: int) -> dict[str, Any]:
    return {"timestamp": f"2026-02-01T00:00:{n:02d}.000Z", "type": kind, "payload": payload}


def _say(role: str, words: str) -> dict[str, Any]:
    part = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": words}]}


def _rollout(path: Path) -> Path:
    items: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": "s", "base_instructions": {"text": "Be a coder."}}),
        ("turn_context", {"model": "gpt-5-codex"}),
        ("response_item", _say("user", "Add a cache module. Never change the public API.")),
        (
            "event_msg",
            {"type": "user_message", "message": "Add a cache module. Never change the public API."},
        ),
        (
            "response_item",
            {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "call_id": "c1"},
        ),
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"}),
        (
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "cargo test -p core"]}),
                "call_id": "c2",
            },
        ),
        (
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": "Exit code: 101\nerror[E0425]",
            },
        ),
        ("response_item", _say("assistant", "Next I'll fix E0425 in the new module.")),
        (
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    _say("user", "Add a cache module. Never change the public API."),
                    _say("user", "Summary: a cache module was started; a test fails."),
                ],
            },
        ),
        ("response_item", _say("user", "Summary: a cache module was started; a test fails.")),
        (
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps(
                    {"command": ["bash", "-lc", "sed -n 1,5p crates/core/src/cache.rs"]}
                ),
                "call_id": "c3",
            },
        ),
        (
            "response_item",
            {"type": "function_call_output", "call_id": "c3", "output": "pub fn hit() {}"},
        ),
        ("response_item", _say("assistant", "Fixed E0425; `cargo test -p core` passes.")),
    ]
    path.write_text(
        "".join(json.dumps(_rec(k, p, n)) + "\n" for n, (k, p) in enumerate(items)),
        encoding="utf-8",
    )
    return path


def test_a_codex_compaction_is_scored_against_what_codex_kept(tmp_path: Path) -> None:
    path = _rollout(tmp_path / "rollout-2026-02-01T00-00-00-abc.jsonl")
    source = load(path)
    assert source.format == "codex"
    line = timeline(source)
    [compaction] = line.compactions
    assert "a test fails" in compaction.text()
    facts = {f.key: f for f in FactIndex(line).facts(compaction.index)}
    created = facts[("artifact", "created", "crates/core/src/cache.rs")]
    assert created.where == ("tool_input",)
    assert facts[("grit", "command", "cargo test -p core")].status == 101
    document = probe_session(path, "checkpoint", source=source, counter=CharCounter())
    [probe] = document["probes"]
    scores = {s["name"]: s for s in probe["strategies"]}
    assert scores["ipse"]["in_context"] == 100.0 and not scores["ipse"]["lost"]
    harness_lost = {f["value"] for f in scores["compaction-summary"]["lost"]}
    assert "crates/core/src/cache.rs" in harness_lost and "E0425" in harness_lost
    assert "Never change the public API." not in harness_lost


def test_a_cline_history_gives_artifacts_from_file_tools(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nAdd a README.\n</task>"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Writing it."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "write_to_file",
                    "input": {"path": "docs/README.md", "content": "# x"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Written."}]},
        {"role": "user", "content": [{"type": "text", "text": "Now add a usage line."}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "replace_in_file",
                    "input": {"path": "docs/README.md", "diff": "+usage"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}],
        },
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    document = probe_session(path, "4", format="cline", counter=CharCounter())
    [probe] = document["probes"]
    assert document["format"] == "cline"
    assert probe["demanded"]["by_kind"]["artifact"] == 1
    ipse = next(s for s in probe["strategies"] if s["name"] == "ipse")
    # the handoff's ledger names the file the tools wrote
    assert ipse["by_kind"]["artifact"] == {"demanded": 1, "in_context": 1, "reachable": 0}


def test_checkpoint_notes_are_kept_by_ipse_and_lost_without_them(tmp_path: Path) -> None:
    notes = {"done": ["wired src/cache/store.py"], "open": ["benchmark it"]}
    turns = [
        user(text("Build the cache.")),
        assistant(call("w1", "Write", file_path="src/cache/store.py", content="x")),
        user(result("w1", "ok")),
        assistant(call("n1", "micro_handoff", **notes)),
        user(result("n1", "notes recorded")),
        assistant(text("Checkpoint taken.")),
        user(text("Continue.")),
        assistant(call("r1", "Read", file_path="src/cache/store.py")),
        user(result("r1", "x")),
    ]
    path = write_session(tmp_path / "s.jsonl", turns)
    document = probe_session(path, "checkpoint", counter=CharCounter())
    [probe] = document["probes"]
    assert probe["kind"] == "checkpoint" and probe["cut"] == 5
    scores = {s["name"]: s for s in probe["strategies"]}
    assert "src/cache/store.py" not in {f["value"] for f in scores["ipse"]["lost"]}
    # the path stands in the notes and in the marker's ledger: without the notes, the ledger
    # still holds it
    assert scores["ipse"]["by_kind"]["grit"]["in_context"] == 1
    bare = scores["ipse-no-notes"]
    assert bare["by_kind"]["grit"] == {"demanded": 1, "in_context": 1, "reachable": 0}
    assert bare["tokens"] < scores["ipse"]["tokens"]
    held = next(
        f
        for f in FactIndex(timeline(load(path))).facts(5)
        if f.key[1:] == ("path", "src/cache/store.py")
    )
    assert "notes" in held.where and "tool_input" in held.where


CODE_MODE_CHECKPOINT = (
    'const r = await tools.mcp__ipse__micro_handoff({done: ["read notes.txt"], '
    'open: ["write the tokenizer"]});\ntext(JSON.stringify(r));'
)


def _code_mode_rollout(path: Path) -> Path:
    """A Codex rollout whose every tool call goes through ``exec`` (code mode), the checkpoint
    included, answered as ipse's MCP server answers it."""
    exec_call = {"type": "custom_tool_call", "name": "exec", "status": "completed"}
    items: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": "s", "base_instructions": {"text": "Be a coder."}}),
        ("turn_context", {"model": "gpt-5-codex"}),
        ("response_item", _say("user", "Read notes.txt, then save a checkpoint.")),
        (
            "response_item",
            {
                **exec_call,
                "call_id": "c1",
                "input": 'const r = await tools.exec_command({cmd: "cat notes.txt"});',
            },
        ),
        (
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "parser: 12.5 MB/s"},
        ),
        ("response_item", {**exec_call, "call_id": "c2", "input": CODE_MODE_CHECKPOINT}),
        (
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": "Checkpoint checkpoint-0123456789abcdef recorded for session s.",
            },
        ),
        ("response_item", _say("assistant", "Saved. The parser reads 12.5 MB/s.")),
        ("response_item", _say("user", "What next?")),
        ("response_item", _say("assistant", "Write the tokenizer; the parser reads 12.5 MB/s.")),
    ]
    path.write_text(
        "".join(json.dumps(_rec(k, p, n)) + "\n" for n, (k, p) in enumerate(items)),
        encoding="utf-8",
    )
    return path


def test_a_codex_code_mode_checkpoint_is_the_cut(tmp_path: Path) -> None:
    """``probe --at checkpoint`` knows a checkpoint made through ``exec`` as the proxy does."""
    path = _code_mode_rollout(tmp_path / "rollout-2026-02-01T00-00-00-code.jsonl")
    line = timeline(load(path))
    document = probe_session(path, "checkpoint", counter=CharCounter())
    [probe] = document["probes"]
    assert probe["kind"] == "checkpoint"
    answered = next(
        i
        for i, m in enumerate(line.messages)
        if any(getattr(b, "call_id", None) == "c2" for b in m.blocks)
    )
    assert probe["cut"] == answered + 1
    # what the checkpoint call says is its notes, as the handoff reads it
    facts = {f.key: f for f in FactIndex(line).facts(probe["cut"])}
    assert "notes" in facts[("grit", "path", "notes.txt")].where


def test_a_checkpoint_that_ends_the_session_is_the_cut(tmp_path: Path) -> None:
    """Right after a Claude Code checkpoint, its result is the session's last message: the
    cut falls at the end (only standing facts are demanded), not "no checkpoint"."""
    turns = [
        user(text("Read notes.txt. Never edit vendor/.")),
        assistant(text("Reading."), call("r1", "Read", file_path="notes.txt")),
        user(result("r1", "parser: 12.5 MB/s")),
        assistant(text("Saving a checkpoint."), call("c1", "mcp__ipse__micro_handoff", done=["x"])),
        user(result("c1", "Checkpoint checkpoint-0123456789abcdef recorded for session s1.")),
    ]
    path = write_session(tmp_path / "s.jsonl", turns)
    document = probe_session(path, "checkpoint", counter=CharCounter())
    [probe] = document["probes"]
    assert (probe["cut"], probe["kind"], probe["messages_after"]) == (5, "checkpoint", 0)
    assert probe["demanded"]["total"] == probe["demanded"]["standing"] > 0
    text_out = run_cli("probe", str(path), "--at", "checkpoint")
    assert text_out.returncode == 0, text_out.stderr
    assert "the session ends here" in text_out.stdout
