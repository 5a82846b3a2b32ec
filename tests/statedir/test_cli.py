"""The ``ipse state`` command group: help with examples, ``--json``, and the entry points."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipse.cli.state import state_group
from tests.conftest import run_cli
from tests.statedir.conftest import RunIpse

COMMANDS = sorted(state_group.commands)


def test_the_group_has_every_command() -> None:
    assert COMMANDS == [
        "canary",
        "checkpoint",
        "init",
        "install",
        "invariant",
        "next",
        "resume",
        "rotate",
        "stamp",
        "uninstall",
        "verify",
    ]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_with_an_example(name: str) -> None:
    result = run_cli("state", name, "--help")
    assert result.returncode == 0
    assert "Example" in result.stdout
    assert "--dir" in result.stdout
    assert "--json" in result.stdout


def test_every_reporting_command_prints_one_json_document(state: Path, run_ipse: RunIpse) -> None:
    (state.parent / "a.txt").write_text("a")
    calls = [
        ("invariant", "x", "--reason", "y"),
        ("next", "step"),
        ("checkpoint", "c"),
        ("stamp", "claim", "--artifact", "a.txt"),
        ("resume",),
        ("verify",),
        ("rotate",),
        ("install",),
        ("uninstall",),
    ]
    for call in calls:
        done = run_ipse("state", *call, "--json", cwd=state.parent)
        assert done.returncode == 0, (call, done.stderr)
        json.loads(done.stdout)


def test_the_console_script_and_python_m_agree(state: Path) -> None:
    script = Path(sys.executable).parent / "ipse"
    if not script.exists():
        pytest.skip("no console script next to this interpreter")
    via_script = subprocess.run(
        [str(script), "state", "resume"], cwd=state.parent, capture_output=True, text=True
    )
    via_module = subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", "state", "resume"],
        cwd=state.parent,
        capture_output=True,
        text=True,
    )
    assert via_script.returncode == via_module.returncode == 0
    assert via_script.stdout == via_module.stdout


def test_the_dir_option_and_environment_variable(tmp_path: Path, run_ipse: RunIpse) -> None:
    done = run_ipse("state", "init", "--goal", "g", "--dir", "work/st", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "work" / "st" / "00_goal.md").is_file()
    env_run = run_cli("state", "next", "from env", cwd=tmp_path, env={"IPSE_STATE_DIR": "work/st"})
    assert env_run.returncode == 0, env_run.stderr
    assert (tmp_path / "work" / "st" / "99_next.md").read_text() == "from env\n"
