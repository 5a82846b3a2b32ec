"""What a tool call did, read from its input, for the harnesses ipse reads (the knowledge the
handoff's ledger and the probe share)."""

from __future__ import annotations

from typing import Any

import pytest

from ipse.handoff._effects import command_of, exit_status, read_paths, shell_artifacts, strings
from ipse.handoff.effects import artifacts
from ipse.transcript import ToolCall, ToolResult


def _call(name: str, data: Any) -> ToolCall:
    return ToolCall("c1", name, data)


def _found(name: str, data: Any) -> set[tuple[str, str]]:
    return {(a.action, a.value) for a in artifacts(_call(name, data))}


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("Write", {"file_path": "/w/a.py", "content": "x"}, {("created", "/w/a.py")}),
        (
            "Edit",
            {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"},
            {("edited", "/w/a.py")},
        ),
        ("MultiEdit", {"file_path": "b.rs", "edits": []}, {("edited", "b.rs")}),
        ("NotebookEdit", {"notebook_path": "n.ipynb", "new_source": ""}, {("edited", "n.ipynb")}),
        ("write_to_file", {"path": "src/x.ts", "content": ""}, {("created", "src/x.ts")}),
        ("replace_in_file", {"path": "src/x.ts", "diff": ""}, {("edited", "src/x.ts")}),
        (
            "str_replace_editor",
            {"command": "create", "path": "/r/new.py"},
            {("created", "/r/new.py")},
        ),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "/r/m.py"},
            {("edited", "/r/m.py")},
        ),
        ("str_replace_editor", {"command": "view", "path": "/r/m.py"}, set()),
        ("Read", {"file_path": "/w/a.py"}, set()),
        (
            "apply_patch",
            "*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Update File: src/old.py\n@@\n"
            "*** Move to: src/moved.py\n*** Delete File: gone.txt\n*** End Patch",
            {
                ("created", "docs/new.md"),
                ("edited", "src/old.py"),
                ("moved", "src/moved.py"),
                ("deleted", "gone.txt"),
            },
        ),
        (
            "shell",
            {"command": ["bash", "-lc", "apply_patch <<'EOF'\n*** Update File: a/b.py\nEOF"]},
            {("edited", "a/b.py")},
        ),
        (
            "bash",
            {"command": "str_replace_editor create /testbed/x.py --file_text 'x'"},
            {("created", "/testbed/x.py")},
        ),
        ("Bash", {"command": "pytest -q > out.txt 2>&1"}, {("created", "out.txt")}),
        ("Bash", {"command": "echo hi >> notes/log.md"}, {("created", "notes/log.md")}),
        ("Bash", {"command": "make 2>&1 > /dev/null"}, set()),
        ("Bash", {"command": "echo $X > $OUT"}, set()),
        (
            "Bash",
            {"command": "rm -f a.txt b.txt && touch c.txt"},
            {("deleted", "a.txt"), ("deleted", "b.txt"), ("created", "c.txt")},
        ),
        ("Bash", {"command": "git mv old.py new.py"}, set()),
        ("Bash", {"command": "mv old.py new.py"}, {("moved", "old.py"), ("moved", "new.py")}),
        (
            "Bash",
            {"command": "git add -A && git commit -m 'Fix the parser'"},
            {("committed", "Fix the parser")},
        ),
        ("Bash", {"command": "git checkout -b feature/x"}, {("branched", "feature/x")}),
        ("Bash", {"command": "git switch -c topic"}, {("branched", "topic")}),
    ],
)
def test_artifacts_by_shape(name: str, data: Any, expected: set[tuple[str, str]]) -> None:
    assert _found(name, data) == expected


def test_the_editor_verb_is_not_a_shell_command() -> None:
    assert command_of(_call("str_replace_editor", {"command": "view", "path": "/a"})) is None
    assert command_of(_call("Bash", {"command": "ls -la"})) == "ls -la"
    assert command_of(_call("shell", {"command": ["bash", "-lc", "make test"]})) == "make test"
    assert command_of(_call("exec", {"cmd": ["git", "status"]})) == "git status"


@pytest.mark.parametrize(
    ("text", "is_error", "status"),
    [
        ("Exit code: 2\nboom", False, 2),
        ("<returncode>0</returncode>\n<output>ok</output>", False, 0),
        ('{"output": "x", "metadata": {"exit_code": 1}}', False, 1),
        ("all good", False, None),
        ("Error: failed", True, 1),
    ],
)
def test_exit_status_where_the_result_says(text: str, is_error: bool, status: int | None) -> None:
    assert exit_status(ToolResult("c1", text, is_error)) == status


def test_an_editor_call_without_a_verb_reads_and_changes_nothing() -> None:
    """Found by the ledger's tests: OpenHands writes a file read as ``str_replace_editor``
    with a path and no ``command``; it was taken for an edit (the name says "replace")."""
    call = _call("str_replace_editor", {"path": "/repo/parser.py"})
    assert list(artifacts(call)) == []
    assert read_paths(call) == ["/repo/parser.py"]


def test_a_heredoc_commit_message_is_its_first_line() -> None:
    """``git commit -m "$(cat <<'EOF' ...`` was read as the message ``"$(cat``."""
    command = "git add -A && git commit -m \"$(cat <<'EOF'\nFix the parser\n\nMore.\nEOF\n)\""
    assert {(a.action, a.value) for a in shell_artifacts(command)} == {
        ("committed", "Fix the parser")
    }


def test_a_heredoc_commit_after_a_comment_line_is_read() -> None:
    """A command line opened by a comment (``# commit it``) hid the commit after it: the part
    before the heredoc has an open quote, and its words were then split at spaces alone."""
    command = "# commit it\ngit commit -m \"$(cat <<'EOF'\nFix the parser\n\nMore.\nEOF\n)\""
    assert {(a.action, a.value) for a in shell_artifacts(command)} == {
        ("committed", "Fix the parser")
    }


def test_a_comparison_in_quoted_code_is_no_redirection() -> None:
    """``python -c "print(1 > 0)"`` was read as creating a file named ``0``."""
    assert list(shell_artifacts('python -c "print(1 > 0)"')) == []
    assert [a.value for a in shell_artifacts("mv a b > log 2>&1")] == ["log", "a", "b"]


def test_codex_s_exit_line_gives_the_status() -> None:
    """Codex's unified exec answers ``Process exited with code N``."""
    result = ToolResult("c1", "Chunk ID: 1\nWall time: 0.2s\nProcess exited with code 101\n")
    assert exit_status(result) == 101


def test_inputs_nested_deeper_than_the_stack_are_walked() -> None:
    deep: Any = "needle"
    for _ in range(5000):
        deep = {"k": [deep]}
    assert list(strings(deep)) == ["needle"]
