"""The command line as a user meets it: version, help with examples, inspect --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ipse import __version__
from ipse.cli.main import _COMMANDS
from tests.conftest import BIG_SESSION, HTTP_LOG, OPENAI_TRAJ


def _ipse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args], capture_output=True, text=True, check=False
    )


def test_version() -> None:
    result = _ipse("--version")
    assert result.returncode == 0
    assert __version__ in result.stdout


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = _ipse(command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Example" in result.stdout


def test_unknown_option_is_a_usage_error() -> None:
    result = _ipse("inspect", "--no-such-option")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


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


def test_inspect_human_output_for_openai() -> None:
    result = _ipse("inspect", str(OPENAI_TRAJ))
    assert result.returncode == 0, result.stderr
    assert "bash" in result.stdout and "tokens by kind" in result.stdout
