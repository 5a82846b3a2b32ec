"""``ipse replay`` from the command line: the table, ``--json``, several sessions, and one-line
errors with exit 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SESSION, CliRun

from .test_lines import _compacted


def test_json_is_one_document_with_both_sides(cli: CliRun, tmp_path: Path) -> None:
    path = _compacted(tmp_path)
    result = cli("replay", str(path), "--autopilot-hard", "60000", "--compact-at", "110000",
                 "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["policy"]["mode"] == "cut" and found["policy"]["hard"] == 60_000
    assert set(found["recorded"]) == set(found["with_policy"])
    assert set(found["recorded"]) >= {
        "input_usd",
        "conversation_usd",
        "bill_usd",
        "cache_write_tokens",
        "cache_read_tokens",
        "peak_tokens",
        "mean_tokens",
        "above_limit",
    }
    assert found["cuts"] and all(c["continuity"] is not None for c in found["cuts"])
    assert found["lines"][0]["limit"] == 110_000
    assert found["targets"]["no_request_above_limit"] is True


def test_the_table_names_both_sides_and_the_targets(cli: CliRun) -> None:
    result = cli("replay", str(EXAMPLE_SESSION))
    assert result.returncode == 0, result.stderr
    assert "recorded" in result.stdout and "with policy" in result.stdout
    assert "targets:" in result.stdout and "why: too short" in result.stdout


def test_several_sessions_are_one_row_each(cli: CliRun, tmp_path: Path) -> None:
    path = _compacted(tmp_path)
    table = cli("replay", str(EXAMPLE_SESSION), str(path), "--no-probe")
    assert table.returncode == 0, table.stderr
    assert EXAMPLE_SESSION.name in table.stdout and path.name in table.stdout
    found = json.loads(cli("replay", str(EXAMPLE_SESSION), str(path), "--json").stdout)
    assert [Path(d["session"]).name for d in found["sessions"]] == [EXAMPLE_SESSION.name, path.name]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["missing.jsonl"], "no such file or folder"),
        ([str(EXAMPLE_SESSION), "--policy", "sometimes"], "'sometimes' is not one of"),
        ([str(EXAMPLE_SESSION), "--autopilot-soft", "9000", "--autopilot-hard", "800"],
         "--autopilot-soft (9000) must not be above --autopilot-hard (800)"),
        ([str(EXAMPLE_SESSION), "--autopilot-hard", "0"], "--autopilot-hard: a number of tokens"),
        ([str(EXAMPLE_SESSION), "--window", "0"], "--window"),
        ([], "Missing argument"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    cli: CliRun, tmp_path: Path, args: list[str], said: str
) -> None:
    result = cli("replay", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ipse: error:") and said in lines[0]


def test_a_file_that_is_no_session_is_refused_in_one_line(cli: CliRun, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a session\n", encoding="utf-8")
    result = cli("replay", str(path), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
