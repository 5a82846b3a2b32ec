"""Recall, search and listing through the MCP server and the command line: the same scope, the
same refusals, the same answers (one library function under both)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from ipse.archive import open_archive
from ipse.archive.testing import Item
from ipse.mcp._tools import Settings
from tests.conftest import run_cli
from tests.mcp.test_mcp_tools import call

_SESSION_VARIABLES = (
    "IPSE_SESSION",
    "CLAUDE_CODE_SESSION_ID",
    "CODEX_THREAD_ID",
    "CODEX_SESSION_ID",
)


@pytest.fixture(autouse=True)
def _no_inherited_session(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _SESSION_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


def _archive(session: str, items: tuple[Item, ...], project: Path | None = None) -> None:
    archive = open_archive()
    try:
        archive.put(session, items, "test")
        if project is not None:
            from ipse.archive._scope import project_key

            archive.add_project(session, project_key(project))
    finally:
        archive.close()


def _mcp(session: str, cwd: Path, name: str, arguments: dict[str, Any]) -> Any:
    return call(Settings(session=session, cwd=cwd), name, arguments)


def _error(result: Any) -> str:
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


def _read(item_id: str, output: str) -> Item:
    return Item(
        kind="tool",
        id=item_id,
        tool="Read",
        call={"type": "tool_use", "id": item_id, "name": "Read", "input": {"path": "config.py"}},
        result={"type": "tool_result", "tool_use_id": item_id, "content": output},
        message=1,
    )


def corpus() -> tuple[Item, ...]:
    from ipse.archive.testing import corpus

    return corpus()


def test_recall_by_id_reads_no_other_users_session_unless_asked(project: Path) -> None:
    """Another user's session in a shared archive: an id from it was given to whoever asked."""
    _archive("session:theirs", (_read("r1", "their secret"),))
    refused = _error(_mcp("session:mine", project, "recall", {"id": "r1"}))
    assert "no archived item 'r1' in session 'session:mine'" in refused
    asked = _mcp("session:mine", project, "recall", {"id": "r1", "scope": "all"})
    assert "config.py" in asked.structured_content["text"]
    cli = run_cli("recall", "r1", cwd=project)
    assert cli.returncode == 2 and "no archived item 'r1'" in cli.stderr
    assert run_cli("recall", "r1", "--scope", "all", cwd=project).returncode == 0
    assert run_cli("recall", "r1", "--session", "theirs", cwd=project).returncode == 0


def test_the_same_refusal_from_the_mcp_server_and_the_command_line(project: Path) -> None:
    """Two conversations under one session key, each with a call ``toolu_1``."""
    for output in ("alice's file", "bob's file"):
        _archive("hash:k", (_read("toolu_1", output),))
    mcp = _error(_mcp("hash:k", project, "recall", {"id": "toolu_1"}))
    cli = run_cli("recall", "toolu_1", "--session", "hash:k", cwd=project)
    assert cli.returncode == 2
    assert "different items" in mcp and cli.stderr.strip().endswith(mcp)
    assert "alice" not in mcp + cli.stdout and "bob" not in mcp + cli.stdout


def test_an_id_prefix_answers_alike_from_the_mcp_server_and_the_command_line(
    project: Path,
) -> None:
    """The ledger's short ids: a unique start gives the item, a shared one is refused with
    the ids it starts, the same words from both."""
    _archive("s:p", (_read("toolu_01AbCdEf", "first"), _read("toolu_01AbXyZw", "second")))
    got = _mcp("s:p", project, "recall", {"id": "toolu_01AbC"})
    assert "first" in got.structured_content["text"]
    cli = run_cli("recall", "toolu_01AbX", "--session", "s:p", cwd=project)
    assert cli.returncode == 0 and "second" in cli.stdout
    mcp = _error(_mcp("s:p", project, "recall", {"id": "toolu_01Ab"}))
    assert "toolu_01AbCdEf" in mcp and "toolu_01AbXyZw" in mcp
    cli = run_cli("recall", "toolu_01Ab", "--session", "s:p", cwd=project)
    assert cli.returncode == 2 and cli.stderr.strip().endswith(mcp)


def test_search_answers_alike_from_the_mcp_server_and_the_command_line(project: Path) -> None:
    _archive("session:mine", corpus(), project)
    _archive("session:other", corpus())
    asked = {"query": "KeyError", "kind": "read"}
    mcp = _mcp("session:mine", project, "recall", asked).structured_content
    cli = run_cli("recall", "--grep", "KeyError", "--kind", "read", "--json", cwd=project)
    assert cli.returncode == 0, cli.stderr
    document = json.loads(cli.stdout)
    assert [m["id"] for m in mcp["matches"]] == [m["id"] for m in document["matches"]] == ["g1"]
    assert "- g1 [read Grep]" in mcp["text"] and "recall with id=ID" in mcp["text"]
    assert (
        document["scope"] == "this project's sessions" and mcp["scope"] == "session 'session:mine'"
    )
    by_path = _mcp("session:mine", project, "recall", {"path": "config.py"}).structured_content
    assert [m["id"] for m in by_path["matches"]] == ["r1", "e1"]
    everywhere = run_cli("recall", "--path", "config.py", "--scope", "all", "--json", cwd=project)
    assert {m["session"] for m in json.loads(everywhere.stdout)["matches"]} == {
        "session:mine",
        "session:other",
    }


def test_archive_list_newest_first_in_the_scope(project: Path) -> None:
    _archive("session:mine", corpus(), project)
    _archive("session:other", corpus()[:2])
    listed = _mcp("session:mine", project, "archive_list", {"kind": "edit"}).structured_content
    assert [i["id"] for i in listed["items"]] == ["p1", "e1"]
    assert listed["text"].splitlines()[1].startswith("- p1 [edit apply_patch]")
    sessions = json.loads(run_cli("archive", "list", "--json", cwd=project).stdout)
    assert sessions["sessions"] == [{"session": "session:mine", "items": 8}]
    assert sessions["other_sessions"] == 1
    every = json.loads(run_cli("archive", "list", "--scope", "all", "--json", cwd=project).stdout)
    assert [s["session"] for s in every["sessions"]] == ["session:mine", "session:other"]
    bare = json.loads(run_cli("archive", "list", "mine", "--kind", "command", "--json").stdout)
    assert [i["id"] for i in bare["items"]] == ["b1", "call_c"]


def test_a_checkpoint_is_found_from_a_new_session_of_the_same_project(project: Path) -> None:
    notes = {"done": ["ported the parser"], "open": ["tokenizer"]}
    recorded = _mcp("session:first", project, "micro_handoff", notes).structured_content
    later = _mcp("session:second", project, "recall", {"checkpoint": recorded["checkpoint"]})
    assert "ported the parser" in later.structured_content["text"]
    elsewhere = _mcp(
        "session:third", project.parent, "recall", {"checkpoint": recorded["checkpoint"]}
    )
    assert "no archived item" in _error(elsewhere)


def test_every_breadcrumb_shows_an_id_recall_takes(project: Path, tmp_path: Path) -> None:
    from tests.conftest import EXAMPLE_SESSION

    out = tmp_path / "out.json"
    args = ["handoff", str(EXAMPLE_SESSION), "--at", "now", "--breadcrumbs", "-o", str(out)]
    assert run_cli(*args, cwd=project).returncode == 0
    body = json.loads(out.read_text())
    texts = [
        block["text"]
        for message in body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "text"
    ]
    crumbs = re.findall(r"\[([\w.-]+)(?:: [^\n]*?)?; recall ([^\s\]]+)\]", "\n".join(texts))
    assert len(crumbs) >= 3
    for tool, item_id in crumbs:
        recalled = run_cli("recall", item_id, "--json", cwd=project)
        assert recalled.returncode == 0, recalled.stderr
        assert json.loads(recalled.stdout)["tool"] == tool
