"""Bad input: a one-line error naming the file and the position, exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BIG_SESSION, SHARED, CliResult, run_cli


def _inspect(*args: str) -> CliResult:
    return run_cli("inspect", *args)


def _assert_clean_error(result: CliResult, *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert result.stdout == ""


def test_plain_text_is_neither_json_nor_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some words\nand more\n")
    _assert_clean_error(_inspect(str(path)), str(path), "neither JSON nor JSONL")


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text('{\n  "model": "claude-x",\n  "messages": [{"role": "user", "con')
    _assert_clean_error(_inspect(str(path)), str(path), "line 3")


def test_undetectable_format(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": "world"}))
    _assert_clean_error(_inspect(str(path)), str(path), "cannot tell the format")


@SHARED
def test_bad_jsonl_line_reports_its_number_and_can_be_skipped(tmp_path: Path) -> None:
    lines = BIG_SESSION.read_text().splitlines()[:40]
    lines.insert(5, '{"type": "user", "broken')
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _assert_clean_error(_inspect(str(path)), str(path), "line 6", "--skip-bad-lines")
    skipped = _inspect(str(path), "--skip-bad-lines", "--json")
    assert skipped.returncode == 0, skipped.stderr
    report = json.loads(skipped.stdout)
    assert any("line 6" in w for w in report["warnings"])


def test_tool_result_without_call(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(
        json.dumps(
            {
                "model": "claude-x",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok"},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}],
                    },
                ],
            }
        )
    )
    _assert_clean_error(_inspect(str(path)), str(path), "message 2", "no matching tool call")


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    _assert_clean_error(_inspect(str(path)), str(path), "binary")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    _assert_clean_error(_inspect(str(path)), str(path), "no such file")


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat"])
def test_named_format_that_does_not_fit(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"no": "messages"}))
    _assert_clean_error(_inspect(str(path), "--format", fmt), str(path), "messages")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    _assert_clean_error(_inspect(str(path)), str(path), "empty")


def test_openai_tool_calls_that_are_not_a_list(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "x", "tool_calls": 5},
        ],
    }
    path.write_text(json.dumps(body))
    _assert_clean_error(_inspect(str(path)), str(path), "message 1", "'tool_calls' must be a list")


@pytest.mark.parametrize(
    "body",
    [
        {"model": "claude-x", "messages": [{"role": "user", "content": ["just a string"]}]},
        {"model": "claude-x", "system": ["str"], "messages": [{"role": "user", "content": "x"}]},
        {
            "model": "gpt-x",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [42]}],
        },
        {
            "model": "gpt-x",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "assistant", "content": None, "tool_calls": ["call"]},
            ],
        },
    ],
)
def test_blocks_that_are_not_objects_are_refused_not_rewritten(tmp_path: Path, body: dict) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    _assert_clean_error(_inspect(str(path)), str(path), "not a JSON object")
