"""A session still being written ends in a line without its newline, cut mid-record: every
command that reads it ignores that line with a warning, and no message advises an option the
command does not have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun
from tests.support.generated import Turn, journaled_records, rollout_records
from tests.transcript.harness_cases import gemini_session_jsonl

_EXCHANGE = {
    "request": {
        "url": "https://api.anthropic.com/v1/messages",
        "body": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
        },
    },
    "response": {"status": 200, "body": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
}


def _records(kind: str) -> list[dict[str, Any]]:
    if kind == "claude-code":
        return list(journaled_records([Turn("read it", tool=True), Turn("now the rest")]))
    if kind == "codex":
        return list(rollout_records(3))
    if kind == "http-log":
        return [_EXCHANGE, _EXCHANGE]
    return gemini_session_jsonl()


def _written(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.jsonl"
    lines = [json.dumps(r) for r in _records(kind)]
    cut = lines[-1][: len(lines[-1]) // 2]  # the writer is mid-line
    path.write_text("\n".join(lines) + "\n" + cut)
    return path


COMMANDS: list[tuple[str, ...]] = [
    ("inspect",),
    ("prefix",),
    ("lint",),
    ("report", "-o", "{tmp}/page.html"),
    ("handoff", "--at", "end", "--json"),
]


@pytest.mark.parametrize("kind", ["claude-code", "codex", "http-log", "gemini-cli"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_an_unterminated_last_line_is_ignored_with_a_warning(
    cli: CliRun, tmp_path: Path, kind: str, command: tuple[str, ...]
) -> None:
    path = _written(tmp_path, kind)
    if command[0] in ("prefix", "lint", "handoff") and kind == "gemini-cli":
        pytest.skip(f"{command[0]} does not read Gemini CLI sessions (said in one line)")
    args = [a.replace("{tmp}", str(tmp_path)) for a in command[1:]]
    done = cli(command[0], str(path), *args)
    assert "--skip-bad-lines" not in done.stderr
    assert done.returncode in (0, 1), done.stderr
    assert "unterminated last line" in done.stderr


def test_verify_ignores_it_too(cli: CliRun, tmp_path: Path) -> None:
    path = _written(tmp_path, "claude-code")
    out = tmp_path / "out.json"
    assert cli("handoff", str(path), "--at", "end", "-o", str(out)).returncode == 0
    done = cli("verify", str(path), str(out))
    assert done.returncode == 0, done.stderr
    assert "--skip-bad-lines" not in done.stderr and "unterminated last line" in done.stderr


def test_a_bad_line_in_the_middle_is_still_an_error_and_only_inspect_offers_to_skip(
    cli: CliRun, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(r) for r in _records("codex")]
    lines.insert(2, '{"type": "response_item", "broken')
    path.write_text("\n".join(lines) + "\n")
    inspected = cli("inspect", str(path))
    assert inspected.returncode == 2 and "--skip-bad-lines" in inspected.stderr
    for command in ("prefix", "handoff"):
        done = (
            cli(command, str(path), "--at", "end")
            if command == "handoff"
            else cli(command, str(path))
        )
        assert done.returncode == 2 and "line 3" in done.stderr
        assert "--skip-bad-lines" not in done.stderr
