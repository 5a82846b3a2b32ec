"""The ledger of the removed tool traffic, for every harness ipse reads: what each removed call
did (files changed and read, commands and how they ended, what last failed, where), newest
first, each entry with the id `recall` takes, under a token cap; adversarial but valid input."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipse._tokens import CharCounter, default_counter
from ipse.handoff import HandoffOptions, run, strip
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS, HEADING, SHORT_ID, Ledger, derive, short_ids
from ipse.transcript import Conversation, load
from ipse.transcript._formats import anthropic, openai_responses
from tests.handoff.build import anthropic_conv, assistant, call, result, text, user
from tests.transcript import harness_cases as cases

COUNT = default_counter().count


def ledger_of(conversation: Conversation, at: Any = "end") -> Ledger:
    """The ledger of what a handoff at ``at`` removes."""
    _, report = strip(conversation, at)
    removed = {r.id for r in report.removed if r.kind != "thinking"}
    return derive(conversation.messages[: report.cut], removed, conversation.system)


def lines(ledger: Ledger) -> list[tuple[str, str, str]]:
    return [(e.section, e.value, e.id) for e in ledger.entries]


# ------------------------------------------------------------------------ Claude Code shapes


def _claude_code_session() -> Conversation:
    return anthropic_conv(
        user(text("Fix the failing parser test.")),
        assistant(
            text("Where am I?"),
            call("t0", "Bash", command="git rev-parse --show-toplevel"),
        ),
        user(result("t0", "/work/proj\n")),
        assistant(call("t1", "Read", file_path="/work/proj/src/parser.py")),
        user(result("t1", "def parse(): ...")),
        assistant(call("t2", "Bash", command="cd /work/proj && pytest -q tests/test_parser.py")),
        user(
            {
                **result(
                    "t2",
                    "Exit code 1\nFAILED tests/test_parser.py::test_parse - AssertionError: "
                    "assert 1 == 2\nE   AssertionError: assert 1 == 2\n1 failed",
                ),
                "is_error": True,
            }
        ),
        assistant(call("t3", "Edit", file_path="src/parser.py", old_string="x", new_string="y")),
        user({**result("t3", "String to replace not found in file."), "is_error": True}),
        assistant(call("t4", "Write", file_path="src/new file ✓.py", content="pass\n")),
        user(result("t4", "File created")),
        assistant(call("t5", "Bash", command="# look first\ngit status\ngit diff --stat")),
        user(result("t5", "On branch fix-parser\nnothing to commit")),
        assistant(text("Trying the failing test once more."), call("t6", "Grep", pattern="x")),
        user(result("t6", "src/parser.py:1")),
        assistant(text("Done for now.")),
    )


def test_a_claude_code_session_gives_every_section_newest_first() -> None:
    ledger = ledger_of(_claude_code_session())
    assert lines(ledger) == [
        ("failing", "Edit src/parser.py", "t3"),
        ("failing", "cd /work/proj && pytest -q tests/test_parser.py", "t2"),
        ("changed", "src/new file ✓.py", "t4"),  # spaces and unicode, exactly as written
        ("commands", "git status ...", "t5"),  # the first meaningful line, and it goes on
        ("commands", "git rev-parse --show-toplevel", "t0"),
        ("read", "/work/proj/src/parser.py", "t1"),
    ]
    edit, pytest_run = ledger.entries[:2]
    assert pytest_run.status == 1
    assert pytest_run.detail == (
        "tests/test_parser.py::test_parse; E   AssertionError: assert 1 == 2"
    )
    assert edit.detail == ""  # (no error line in "String to replace not found in file.")
    assert (ledger.cwd, ledger.root, ledger.branch) == ("/work/proj", "/work/proj", "fix-parser")
    assert ledger.others == (("Grep", 1),) and ledger.other_ids == (("t6",),)
    assert "Other calls: Grep x1 [t6]" in ledger.text(1000, COUNT).text


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.text("ab_01", min_size=1, max_size=20), min_size=1, max_size=30))
def test_a_shown_id_is_the_start_of_its_id_and_of_no_other(ids: list[str]) -> None:
    refs = short_ids(ids, set(ids[::2]))
    for ident, ref in refs.items():
        assert ident in ids[::2] and ident.startswith(ref) and len(ref) >= SHORT_ID
        assert [i for i in set(ids) if i.startswith(ref)] == [ident]


def test_a_newer_successful_run_clears_the_failure_and_a_newer_edit_the_failed_one() -> None:
    conversation = anthropic_conv(
        user(text("go")),
        assistant(call("a", "Bash", command="pytest -q")),
        user({**result("a", "Exit code 1\nFAILED t.py::test_x"), "is_error": True}),
        assistant(call("b", "Edit", file_path="p.py", old_string="x", new_string="y")),
        user({**result("b", "String to replace not found"), "is_error": True}),
        assistant(call("c", "Edit", file_path="p.py", old_string="z", new_string="y")),
        user(result("c", "ok")),
        assistant(call("d", "Bash", command="pytest -q")),
        user(result("d", "3 passed")),
        assistant(text("green")),
    )
    ledger = ledger_of(conversation)
    assert lines(ledger) == [("changed", "p.py", "c"), ("commands", "pytest -q", "d")]
    assert ledger.entries[0].actions == ("edited",)


def test_the_ids_are_the_archive_ids_of_removed_calls() -> None:
    conversation = _claude_code_session()
    _, report = strip(conversation, "end")
    archived = {r.id for r in report.removed}
    assert {e.id for e in ledger_of(conversation).entries} <= archived


def test_a_session_with_no_tool_traffic_has_an_empty_ledger() -> None:
    conversation = anthropic_conv(user(text("hi")), assistant(text("hello")))
    ledger = ledger_of(conversation)
    assert ledger.entries == () and ledger.calls == 0 and ledger.others == ()


# ------------------------------------------------------------------------------ Codex shapes

PATCH = (
    "*** Begin Patch\n*** Add File: crates/core/src/cache.rs\n+pub fn hit() {}\n"
    "*** Update File: crates/core/src/lib.rs\n@@\n+mod cache;\n*** Delete File: old.rs\n"
    "*** End Patch"
)


def _codex_body() -> dict[str, Any]:
    def item(kind: str, call_id: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "call_id": call_id, **fields}

    return {
        "model": "gpt-5-codex",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            item("custom_tool_call", "c1", name="apply_patch", input=PATCH),
            item("custom_tool_call_output", "c1", output="Success. Updated the following files"),
            item(
                "function_call",
                "c2",
                name="exec_command",
                arguments=json.dumps({"cmd": "cargo test -p core", "workdir": "/w/repo"}),
            ),
            item(
                "function_call_output",
                "c2",
                output="Process exited with code 101\nOutput:\n"
                "test cache::hit ... FAILED\nerror[E0425]: cannot find value `x`",
            ),
            item(
                "function_call",
                "c3",
                name="shell",
                arguments=json.dumps({"command": ["bash", "-lc", "sed -n 1,40p src/lib.rs"]}),
            ),
            item(
                "function_call_output",
                "c3",
                output=json.dumps({"output": "mod x;", "metadata": {"exit_code": 0}}),
            ),
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "E0425 next."}],
            },
        ],
    }


def test_codex_apply_patch_exec_command_and_shell() -> None:
    ledger = ledger_of(openai_responses.read_body(_codex_body()))
    assert lines(ledger) == [
        ("failing", "cargo test -p core", "c2"),
        ("changed", "crates/core/src/cache.rs", "c1"),
        ("changed", "crates/core/src/lib.rs", "c1"),
        ("changed", "old.rs", "c1"),
        ("read", "src/lib.rs", "c3"),
    ]
    failing = ledger.entries[0]
    assert failing.status == 101
    assert failing.detail == "cache::hit; error[E0425]: cannot find value `x`"
    assert [e.actions for e in ledger.section("changed")] == [
        ("created",),
        ("edited",),
        ("deleted",),
    ]
    assert ledger.cwd == "/w/repo"


# ------------------------------------------------------------------ the other harnesses' files


def _harness(tmp_path: Path, name: str) -> Conversation:
    write: dict[str, Callable[[], Path]] = {
        "cline": lambda: cases.write_json(
            tmp_path / "api_conversation_history.json", cases.cline_history()
        ),
        "swe-agent": lambda: cases.write_json(tmp_path / "a.traj", cases.swe_agent_traj()),
        "swe-agent-classic": lambda: cases.write_json(
            tmp_path / "b.traj", cases.swe_agent_classic_traj()
        ),
        "mini-swe-agent": lambda: cases.write_json(
            tmp_path / "c.traj.json", cases.mini_swe_agent_traj()
        ),
        "openhands": lambda: cases.write_json(tmp_path / "oh.json", cases.openhands_events()),
        "openhands-v1": lambda: cases.write_json(tmp_path / "v1.json", cases.openhands_v1_events()),
        "gemini-cli": lambda: cases.write_jsonl(tmp_path / "g.jsonl", cases.gemini_session_jsonl()),
        "gemini-cli-0.61": lambda: cases.write_jsonl(
            tmp_path / "g61.jsonl", cases.gemini_061_session_jsonl()
        ),
    }
    return load(write[name]()).current()


@pytest.mark.parametrize(
    ("harness", "expected", "cwd"),
    [
        ("cline", [("read", "parser.py", "toolu_1")], None),
        ("swe-agent", [("commands", "ls", "call_1")], None),
        (
            "swe-agent-classic",
            [
                ("changed", "/repo/tests/missing_colon.py", "action-7"),
                ("commands", "submit", "action-9"),
                ("commands", "find_file missing_colon.py", "action-3"),
                ("read", "tests/missing_colon.py", "action-5"),
            ],
            "/repo",
        ),
        ("mini-swe-agent", [("commands", "ls", "call_1")], None),
        ("openhands", [("commands", "ls", None), ("read", "/repo/parser.py", None)], None),
        (
            "openhands-v1",
            [("failing", "file_editor /repo/parser.py", "call_b"), ("commands", "ls", "call_a")],
            None,
        ),
        (
            "gemini-cli",
            [
                ("failing", "pytest", "run_shell_command-2"),
                ("read", "/repo/parser.py", None),
            ],
            None,
        ),
        (
            "gemini-cli-0.61",
            [("read", "parser.py", "read_file-6"), ("read", "README.md", "read_file-3")],
            None,
        ),
    ],
)
def test_every_harness_gives_its_ledger(
    tmp_path: Path, harness: str, expected: list[tuple[str, str, str | None]], cwd: str | None
) -> None:
    conversation = _harness(tmp_path, harness)
    ledger = ledger_of(conversation)
    found = lines(ledger)
    assert [(s, v) for s, v, _ in found] == [(s, v) for s, v, _ in expected]
    for (_, _, got), (_, _, want) in zip(found, expected, strict=True):
        if want is not None:  # (where the reader makes the id up, any id of a removed call)
            assert got == want
    assert ledger.cwd == cwd
    calls = {b.id for m in conversation.messages for b in m.blocks if b.kind == "tool_call"}
    assert {e.id for e in ledger.entries} <= calls


# ------------------------------------------------------------------------------- adversarial


def test_a_huge_command_is_one_clipped_line() -> None:
    command = "python - <<'EOF'\n" + "print('x' * 10)\n" * 100_000 + "EOF"
    conversation = anthropic_conv(
        user(text("go")),
        assistant(call("h", "Bash", command=command)),
        user(result("h", "ok")),
        assistant(call("w", "Bash", command="echo " + "a" * 500_000 + " > out.txt")),
        user(result("w", "ok")),
        assistant(text("done")),
    )
    ledger = ledger_of(conversation)
    values = [e.value for e in ledger.entries]
    assert values[-1] == "python - <<'EOF' ..."
    assert all(len(v) <= 124 for v in values)


def test_binary_output_and_control_characters_come_out_as_visible_escapes() -> None:
    noise = "".join(chr(c) for c in range(0, 32)) + "\x7f\u202e\ud800 ÿ"
    conversation = anthropic_conv(
        user(text("go")),
        assistant(call("b", "Bash", command=f"cat data.bin{noise}")),
        user(
            {**result("b", f"Exit code 2\nValueError: {noise}" + "\x00" * 50_000), "is_error": True}
        ),
        assistant(call("p", "Write", file_path="weird\x1b[2J\ud800name.txt", content="x")),
        user(result("p", "ok")),
        assistant(text("done")),
    )
    rendered = ledger_of(conversation).text(800, COUNT).text
    assert "\x1b" not in rendered and "\x00" not in rendered and "\u202e" not in rendered
    assert "- created weird\\x1b[2J\\ud800name.txt [p]" in rendered
    orjson.dumps(rendered)  # valid UTF-8 all through: no lone surrogate left
    assert rendered.encode("utf-8")


@st.composite
def _sessions(draw: st.DrawFn) -> dict[str, Any]:
    words = st.text(min_size=1, max_size=40)
    messages: list[dict[str, Any]] = [user(text("go"))]
    for n in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["Bash", "Read", "Edit", "Write", "Grep", "Task", "Glob"]))
        argument = draw(words)
        key = {"Bash": "command", "Task": "prompt", "Glob": "pattern"}.get(kind, "file_path")
        ident = f"toolu_01AbCd{n}" if n % 2 else f"c{n}"  # (a long shared start, and short ids)
        messages.append(assistant(call(ident, kind, **{key: argument})))
        output = {**result(ident, draw(words)), "is_error": draw(st.booleans())}
        messages.append(user(output))
    messages.append(assistant(text("done")))
    return {"model": "m", "messages": messages}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_sessions(), cap=st.integers(0, 1200))
def test_the_ledger_holds_its_cap_and_is_the_same_every_time(
    body: dict[str, Any], cap: int
) -> None:
    conversation = anthropic.read_body(body)
    ledger = ledger_of(conversation)
    rendered = ledger.text(cap, COUNT)
    assert rendered.tokens == COUNT(rendered.text)
    assert rendered.tokens <= cap or not rendered.shown  # (the heading alone may not fit)
    assert rendered.omitted == len(ledger.entries) - len(rendered.shown)
    again = ledger_of(anthropic.read_body(body)).text(cap, COUNT)
    assert again.text == rendered.text  # deterministic: the same bytes each time
    assert rendered.text.startswith(HEADING)
    # newest first within each section: the shown entries are the first of each section
    for section in ("failing", "changed", "commands", "read"):
        shown = [e for e in rendered.shown if e.section == section]
        assert shown == ledger.section(section)[: len(shown)]
    # the other calls: each tool's newest ids first, as their unique starts
    others = [line for line in rendered.text.splitlines() if line.startswith("Other calls: ")]
    for (tool, n), ids in zip(ledger.others, ledger.other_ids, strict=True):
        assert len(ids) == n
        for line in others:
            part = line.split(f"{tool} x{n}", 1)[1].split(", ")[0] if f"{tool} x{n}" in line else ""
            refs = re.findall(r"\[([^\]]+)\]", part)
            assert refs == [ledger.ref(i) for i in ids[: len(refs)]]


def test_a_character_counter_caps_it_as_well() -> None:
    ledger = ledger_of(_claude_code_session())
    counter = CharCounter()
    rendered = ledger.text(120, counter.count)
    assert counter.count(rendered.text) <= 120 and rendered.omitted > 0


# --------------------------------------------------------------------------- the real sessions


@pytest.mark.shared
@pytest.mark.parametrize("folder", ["claude-code", "codex", "openai-chat"])
def test_every_shared_session_gets_a_capped_ledger_in_its_marker(
    shared_data: Path, folder: str, tmp_path: Path
) -> None:
    from ipse.archive import Caller, open_archive, recall_item

    for n, path in enumerate(sorted((shared_data / folder).glob("*.json*"))):
        conversation = load(path).current()
        archive = open_archive(f"sqlite:///{tmp_path / f'{n}.db'}")
        done = run(conversation, HandoffOptions(at="now"), session="s", archive=archive)
        if not done.report.removed:
            continue
        assert done.marked is not None and done.marked.rendered is not None
        rendered, ledger = done.marked.rendered, done.marked.ledger
        assert ledger is not None
        assert rendered.tokens <= DEFAULT_LEDGER_TOKENS, path.name
        marker = done.report.marker
        assert marker is not None and rendered.text in marker
        texts = [b.text for m in done.after.messages for b in m.blocks if b.kind == "text"]
        assert sum(marker in t for t in texts) == 1  # one marker, in the context
        removed = {r.id for r in done.report.removed}
        assert {e.id for e in ledger.entries} <= removed, path.name
        # every id the marker shows (an entry's, an other call's) is one recall resolves,
        # to the call it stands for, in the archive the handoff filled
        shown = [(ledger.ref(e.id), e.id) for e in rendered.shown]
        assert all(f"[{ref}]" in marker for ref, _ in shown), path.name
        others = [(ledger.ref(i), i) for ids in ledger.other_ids for i in ids]
        shown += [(ref, full) for ref, full in others if f"[{ref}]" in marker]
        for ref, full in shown:
            assert full.startswith(ref) and len(ref) >= min(len(full), 12)
            assert recall_item(archive, Caller(session="s"), ref).item.id == full, path.name
        archive.close()
