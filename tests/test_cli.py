"""The command line as a user meets it: version, help with examples, inspect --json, and every
error as one line with its exit code (2 bad input or usage, 1 a check failed, 3 a bug)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest

from ipse import __version__
from ipse.cli.main import _COMMANDS
from ipse.errors import CheckFailed, InputError
from tests.conftest import BIG_SESSION, HTTP_LOG, OPENAI_TRAJ, REPO, SHARED, CliResult, run_cli


def _ipse(*args: str) -> CliResult:
    return run_cli(*args)


def test_version() -> None:
    result = _ipse("--version")
    assert result.returncode == 0
    assert __version__ in result.stdout


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = _ipse(command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Example" in result.stdout


def _command_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand, as the words that name it."""
    found = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found.extend(_command_paths(sub, (*path, name)))
    return found


def test_every_subcommand_has_help_with_an_example() -> None:
    from ipse.cli.main import cli

    paths = [path for path in _command_paths(cli) if len(path) > 1]
    assert len(paths) > 20
    missing = [" ".join(p) for p in paths if "Example" not in run_cli(*p, "--help").stdout]
    assert missing == []


def test_no_help_shows_source_markup_or_a_broken_variable() -> None:
    """Help is text for a terminal: no reStructuredText ``x`` quotes, and no NAME= value split
    over two lines (which click's rewrapping shows as "NAME= http://...")."""
    from ipse.cli.main import cli

    paths = _command_paths(cli)
    assert len(paths) > len(_COMMANDS)  # the subcommands too
    bad = []
    for path in paths:
        for columns in ("80", "200"):
            done = run_cli(*path, "--help", env={"COLUMNS": columns})
            assert done.returncode == 0, (path, done.stderr)
            bad += [(path, line) for line in done.stdout.splitlines() if "``" in line]
            bad += [(path, line) for line in done.stdout.splitlines() if "= http" in line]
    assert bad == []


def test_unknown_option_is_a_usage_error() -> None:
    result = _ipse("inspect", "--no-such-option")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


@SHARED
def test_inspect_json_for_a_claude_code_session() -> None:
    result = _ipse("inspect", str(BIG_SESSION), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "claude-code"
    assert report["tool_calls"] == 150
    assert report["after_last_compaction"]["tool_calls"] == 81
    assert sum(report["tool_calls_by_name"].values()) == 150
    assert sum(report["after_last_compaction"]["tool_calls_by_name"].values()) == 81
    tokens = report["tokens"]
    assert "o200k_base" in tokens["tokenizer"] and "approximate" in tokens["tokenizer"]
    assert set(tokens["by_kind"]) >= {
        "human_text",
        "agent_text",
        "harness_text",
        "tool_calls",
        "tool_results",
        "thinking",
        "system",
        "tools",
    }
    assert tokens["by_kind"]["tool_results"] > tokens["by_kind"]["agent_text"] > 0
    assert report["messages"] > report["after_last_compaction"]["messages"]


@SHARED
def test_inspect_json_for_an_http_log() -> None:
    result = _ipse("inspect", str(HTTP_LOG), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "http-log"
    rows = report["requests"]
    assert [r["index"] for r in rows] == list(range(18))
    assert all(r["usage"] and r["model"] and r["time"] and r["input_tokens"] > 0 for r in rows)
    # the side requests (15 and 17 in the file names) are far smaller than the main requests
    assert rows[14]["input_tokens"] < rows[13]["input_tokens"] / 5


@SHARED
def test_inspect_human_output_for_openai() -> None:
    result = _ipse("inspect", str(OPENAI_TRAJ))
    assert result.returncode == 0, result.stderr
    assert "bash" in result.stdout and "tokens by kind" in result.stdout


@click.command()
@click.argument("what")
def boom(what: str) -> None:
    """A command with a bug in it (for the error-handling tests)."""
    if what == "input":
        raise InputError("no such thing", path="x.json", position="line 3")
    if what == "check":
        raise CheckFailed("the check failed")
    raise RuntimeError("a bug\nover two lines")


@pytest.fixture
def with_boom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_COMMANDS, "boom", "tests.test_cli:boom")


@pytest.mark.usefixtures("with_boom")
@pytest.mark.parametrize(
    ("what", "code", "line"),
    [
        ("input", 2, "ipse: error: x.json:line 3: no such thing"),
        ("check", 1, "ipse: error: the check failed"),
        ("bug", 3, "ipse: internal error: RuntimeError: a bug over two lines; please report it"),
    ],
)
def test_every_error_is_one_line_with_its_exit_code(what: str, code: int, line: str) -> None:
    result = run_cli("boom", what)
    assert result.returncode == code
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(line), result.stderr


@pytest.mark.usefixtures("with_boom")
def test_a_bug_shows_its_traceback_only_with_ipse_debug() -> None:
    assert "Traceback" not in run_cli("boom", "bug").stderr
    result = run_cli("boom", "bug", env={"IPSE_DEBUG": "1"})
    assert result.returncode == 3
    assert "Traceback" in result.stderr and "RuntimeError: a bug" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("ipse: internal error:")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["inspect", "--no-such-option"], "No such option '--no-such-option'; see ipse inspect"),
        (["inspect"], "Missing argument 'FILE'; see ipse inspect --help"),
        (["no-such-command"], "No such command 'no-such-command'; see ipse --help"),
        (["state", "nope"], "No such command 'nope'; see ipse state --help"),
    ],
)
def test_usage_errors_are_one_line_naming_the_help(args: list[str], needle: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and needle in result.stderr, result.stderr


def test_the_executable_and_the_in_process_runner_agree(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    crash = "import ipse.cli.main as m; m._COMMANDS['boom'] = 'tests.test_cli:boom'; m.entry()"
    for args in (["inspect", str(bad)], ["inspect", "--nope"], ["boom", "bug"]):
        done = subprocess.run(
            [sys.executable, "-c", crash, *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO,
        )
        in_process = run_cli(*args) if args[0] != "boom" else None
        assert "Traceback" not in done.stderr
        if in_process is not None:
            assert (done.returncode, done.stdout, done.stderr) == (
                in_process.returncode,
                in_process.stdout,
                in_process.stderr,
            )
        else:
            assert done.returncode == 3


@SHARED
def test_output_cut_short_by_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``ipse handoff ... | head -c 1``: the executable stops on SIGPIPE, with nothing on stderr."""
    entry = "from ipse.cli.main import entry; entry()"
    args = ["handoff", str(BIG_SESSION), "--at", "now", "--no-archive"]
    child = subprocess.Popen(
        [sys.executable, "-c", entry, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.read(1) == b"{"
    child.stdout.close()  # the reader goes away, as `head` does
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) in (-signal.SIGPIPE, 0)
    assert err == "" or ("Traceback" not in err and "internal error" not in err)
