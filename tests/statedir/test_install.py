"""install / uninstall: the marked block and the Claude Code hooks, added and removed exactly."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipse.agents._commands import hook_program
from ipse.statedir import init, install, uninstall
from ipse.statedir._install import (
    add_block,
    hook_groups,
    merge_hooks,
    remove_block,
    rule_block,
    unmerge_hooks,
)
from tests.statedir.conftest import RunIpse
from tests.statedir.util import as_json, wal_records
from tests.support.strategies import json_values

RULE = "read 00 through 99 in order before doing anything else"
texts = st.text(alphabet=st.sampled_from("ab \n#-<>!"), max_size=80)


@given(texts)
def test_remove_undoes_add(text: str) -> None:
    added = add_block(text, rule_block("state"))
    assert RULE in added and added.startswith(text)
    assert add_block(added, rule_block("state")) == added  # idempotent
    assert remove_block(added)[0] == text


def test_remove_undoes_add_for_a_created_file() -> None:
    added = add_block(None, rule_block("state"))
    assert remove_block(added)[0] is None


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_value = json_values(json_leaf, st.text(max_size=5), size=3, leaves=8)
groups = st.lists(
    st.fixed_dictionaries(
        {
            "matcher": st.sampled_from(["", "startup", "Edit|Write"]),
            "hooks": st.lists(
                st.fixed_dictionaries(
                    {"type": st.just("command"), "command": st.text(min_size=1, max_size=10)}
                ),
                max_size=2,
            ),
        }
    ),
    min_size=1,
    max_size=3,
)
settings_dicts = st.dictionaries(st.sampled_from(["model", "env", "permissions"]), json_value) | (
    st.builds(
        lambda extra, hooks: {**extra, "hooks": hooks},
        st.dictionaries(st.sampled_from(["model", "env"]), json_value),
        st.dictionaries(
            st.sampled_from(["SessionStart", "PreCompact", "Stop"]), groups, min_size=1
        ),
    )
)


@given(settings_dicts)
def test_unmerge_undoes_merge(settings: dict[str, Any]) -> None:
    ours = hook_groups("")
    merged = merge_hooks(settings, ours)
    assert merge_hooks(merged, ours) == merged
    for event, wanted in ours.items():
        assert all(group in merged["hooks"][event] for group in wanted)
    assert unmerge_hooks(merged, ours) == settings


@pytest.mark.parametrize(
    ("agent", "name"),
    [("generic", "AGENTS.md"), ("codex", "AGENTS.md"), ("gemini", "GEMINI.md")],
)
def test_install_writes_the_rule_into_the_agent_file(
    tmp_path: Path, run_ipse: RunIpse, agent: str, name: str
) -> None:
    original = "# Project\n\nBuild with make.\n"
    (tmp_path / name).write_text(original)
    (tmp_path / name).chmod(0o664)
    done = run_ipse("state", "install", "--agent", agent, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert as_json(done)["changes"] == [{"path": name, "action": "updated"}]
    text = (tmp_path / name).read_text()
    assert text.startswith(original) and RULE in text
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o664
    assert "after any context compaction, re-read them before continuing" in text
    again = run_ipse("state", "install", "--agent", agent, "--json", cwd=tmp_path)
    assert as_json(again)["changes"] == [{"path": name, "action": "unchanged"}]
    assert (tmp_path / name).read_text() == text
    assert run_ipse("state", "uninstall", cwd=tmp_path).returncode == 0
    assert (tmp_path / name).read_text() == original
    assert not (tmp_path / ".claude").exists()


def test_uninstall_keeps_what_the_user_wrote_after_install(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("intro")
    install(tmp_path, tmp_path / "state")
    with open(tmp_path / "AGENTS.md", "a") as handle:
        handle.write("## Later notes\n")
    uninstall(tmp_path, tmp_path / "state")
    assert (tmp_path / "AGENTS.md").read_text() == "intro## Later notes\n"


def test_a_file_install_created_is_removed(tmp_path: Path) -> None:
    install(tmp_path, tmp_path / "state", "gemini")
    assert RULE in (tmp_path / "GEMINI.md").read_text()
    assert (tmp_path / "GEMINI.md").stat().st_mode & 0o777 == 0o644
    uninstall(tmp_path, tmp_path / "state")
    assert list(tmp_path.iterdir()) == []


EXISTING: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def test_claude_code_hooks_are_merged_and_removed_exactly(
    tmp_path: Path, run_ipse: RunIpse
) -> None:
    (tmp_path / ".claude").mkdir()
    settings = tmp_path / ".claude" / "settings.json"
    settings.write_text(json.dumps(EXISTING, indent=2) + "\n")
    (tmp_path / "CLAUDE.md").write_text("# Notes\n")
    done = run_ipse("state", "install", "--agent", "claude-code", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["Stop"] == EXISTING["hooks"]["Stop"]
    starts = data["hooks"]["SessionStart"]
    assert starts[0] == EXISTING["hooks"]["SessionStart"][0]
    assert {g["matcher"] for g in starts[1:]} == {"startup", "resume", "compact"}
    assert all(
        g["hooks"][0]["command"] == f"{hook_program()} state resume --hook claude-code"
        for g in starts[1:]
    )
    # the hooks run with the home install ran with: one signing key and anchor
    assert hook_program().startswith(f"IPSE_HOME={os.environ['IPSE_HOME']} ")
    assert " state checkpoint" in data["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    installed = settings.read_bytes()
    run_ipse("state", "install", "--agent", "claude-code", cwd=tmp_path)
    assert settings.read_bytes() == installed
    done = run_ipse("state", "uninstall", "--json", cwd=tmp_path)
    assert done.returncode == 0
    assert json.loads(settings.read_text()) == EXISTING
    assert (tmp_path / "CLAUDE.md").read_text() == "# Notes\n"


def test_settings_install_created_are_removed(tmp_path: Path) -> None:
    install(tmp_path, tmp_path / "state", "claude-code")
    assert (tmp_path / ".claude" / "settings.json").is_file()
    changes = uninstall(tmp_path, tmp_path / "state")
    assert {c.action for c in changes} == {"removed"}
    assert list(tmp_path.iterdir()) == []


def test_broken_settings_are_refused_and_nothing_is_written(
    tmp_path: Path, run_ipse: RunIpse
) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    done = run_ipse("state", "install", "--agent", "claude-code", cwd=tmp_path)
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert not (tmp_path / "CLAUDE.md").exists()


def test_a_custom_state_folder_is_named_in_the_rule_and_hooks(tmp_path: Path) -> None:
    install(tmp_path, tmp_path / ".agent" / "state", "claude-code")
    assert "If .agent/state/ exists" in (tmp_path / "CLAUDE.md").read_text()
    data = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == f"{hook_program()} state resume --hook claude-code --dir .agent/state"


def _run_hook(command: str, cwd: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """Run a hook command as the agent does: ``sh -c``, with no virtual environment active
    (PATH holds only the system folders) and no state folder in the environment."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_the_installed_hooks_run(state: Path) -> None:
    root = state.parent
    install(root, state, "claude-code")
    data = json.loads((root / ".claude" / "settings.json").read_text())
    start = data["hooks"]["SessionStart"][2]
    assert start["matcher"] == "compact"
    payload = {"hook_event_name": "SessionStart", "source": "compact", "cwd": str(root)}
    done = _run_hook(start["hooks"][0]["command"], root, payload)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Port the parser" in context
    pre = data["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    done = _run_hook(pre, root, {"hook_event_name": "PreCompact", "trigger": "manual"})
    assert done.returncode == 0, done.stderr
    assert wal_records(state)[-1]["text"] == "context compaction (PreCompact manual)"


def test_the_hooks_name_the_ipse_executable_by_absolute_path(tmp_path: Path) -> None:
    install(tmp_path, tmp_path / "state", "claude-code")
    data = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    words = shlex.split(command)
    assert words[0] == f"IPSE_HOME={os.environ['IPSE_HOME']}"  # the home install ran with
    first = words[1]
    assert os.path.isabs(first) and os.access(first, os.X_OK)
    assert Path(first).parent == Path(sys.executable).parent or first == sys.executable


# Every character the POSIX shell treats specially, in a folder name.
HOSTILE = "st$(touch P1)`touch P2`;touch P3|touch P4&&touch P5>P6<x*?[a]{b,c}~!#'\"\\ \t$HOME%"


@pytest.mark.parametrize("name", [HOSTILE, "st$(sh<p)", "it's", "a b", "-n", "new\nline"])
def test_a_hostile_state_folder_name_is_never_run_by_the_hooks(repo: Path, name: str) -> None:
    folder = repo / name
    (repo / "p").write_text("touch PWNED\n")
    init(folder, "Port the parser", "all parser tests pass")
    install(repo, folder, "claude-code")
    data = json.loads((repo / ".claude" / "settings.json").read_text())
    before = set(os.listdir(repo))
    for event, source in (("SessionStart", "startup"), ("PreCompact", "")):
        group = next(g for g in data["hooks"][event] if g["matcher"] == source)
        done = _run_hook(group["hooks"][0]["command"], repo, {"hook_event_name": event})
        assert done.returncode == 0, done.stderr
        if event == "SessionStart":
            context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "Port the parser" in context
    assert set(os.listdir(repo)) == before  # nothing created: no P1..P6, no PWNED
    assert wal_records(folder)[-1]["text"].startswith("context compaction")
    uninstall(repo, folder)
    assert not (repo / ".claude").exists()  # install created it; uninstall removed it all


def test_hooks_written_for_another_executable_are_replaced_and_removed(tmp_path: Path) -> None:
    old = hook_groups(" --dir .agent/state", "ipse")  # a bare `ipse`, as older installs wrote
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": old}))
    install(tmp_path, tmp_path / ".agent" / "state", "claude-code")
    data = json.loads(settings.read_text())
    commands = [g["hooks"][0]["command"] for g in data["hooks"]["SessionStart"]]
    assert len(commands) == 3 and all(c.startswith(hook_program() + " ") for c in commands)
    uninstall(tmp_path, tmp_path / ".agent" / "state")
    assert json.loads(settings.read_text()) == {}


@given(
    st.sampled_from(["# Notes\r\n\r\nBuild.\r\n", "# Notes\r\nmixed\nend", "\ufeff# N\r\n", ""]),
    st.sampled_from(['{\r\n  "model": "opus"\r\n}\r\n', '\ufeff{\r\n  "env": {}\r\n}', None]),
)
def test_state_install_keeps_crlf_files_byte_for_byte(doc: str, settings: str | None) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        claude_md, settings_json = root / "CLAUDE.md", root / ".claude" / "settings.json"
        claude_md.write_bytes(doc.encode())
        if settings is not None:
            settings_json.parent.mkdir()
            settings_json.write_bytes(settings.encode())
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        install(root, root / "state", "claude-code")
        for path, data in before.items():
            after = path.read_bytes()
            if data.count(b"\n") == data.count(b"\r\n") and b"\r\n" in data:
                assert after.count(b"\n") == after.count(b"\r\n"), after
        uninstall(root, root / "state")
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
