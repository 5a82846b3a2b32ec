"""``ipse usage`` and ``ipse usage statusline`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED, CliRun
from tests.usage.history import assistant, shared_history, usage, write_jsonl

# What Claude Code 2.1.332 pipes to a statusLine command at the start of a session (captured
# from the real CLI with a statusLine that saved its stdin; the paths are this test's).
STARTING = {
    "session_id": "1f3921ef-02fe-4392-8397-417d47779a53",
    "transcript_path": "",
    "cwd": "/tmp/slproj",
    "effort": {"level": "medium"},
    "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
    "workspace": {"current_dir": "/tmp/slproj", "project_dir": "/tmp/slproj", "added_dirs": []},
    "version": "2.1.332",
    "output_style": {"name": "default"},
    "cost": {"total_cost_usd": 0, "total_duration_ms": 18479, "total_api_duration_ms": 0,
             "total_lines_added": 0, "total_lines_removed": 0},
    "context_window": {"total_input_tokens": 0, "total_output_tokens": 0,
                       "context_window_size": 1000000, "current_usage": None,
                       "used_percentage": None, "remaining_percentage": None},
    "exceeds_200k_tokens": False,
    "fast_mode": False,
    "thinking": {"enabled": True},
}  # fmt: skip


def _env(root: Path) -> dict[str, str | None]:
    return {"CLAUDE_CONFIG_DIR": str(root / "claude"), "CODEX_HOME": str(root / "codex"),
            "GEMINI_CLI_HOME": str(root / "gemini")}  # fmt: skip


@SHARED
def test_json_by_day_reads_the_agent_clis_folders(
    cli: CliRun, shared_data: Path, tmp_path: Path
) -> None:
    shared_history(shared_data, tmp_path)
    done = cli("usage", "--json", "--timezone", "UTC", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    days = {row["label"]: row for row in document["rows"]}
    assert days["2025-09-03"]["output_tokens"] == 52886
    assert days["2026-02-23"]["models"]["gpt-5.3-codex"]["input_tokens"] == 1134875
    assert document["total"]["calls"] == sum(r["calls"] for r in document["rows"])
    assert document["files_read"] == document["files"] > 0
    again = json.loads(cli("usage", "--json", "--by", "model", env=_env(tmp_path)).stdout)
    assert again["files_read"] == 0
    assert again["total"]["cost_usd"] == pytest.approx(document["total"]["cost_usd"])


def test_since_until_and_the_table(cli: CliRun, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "claude" / "projects" / "p" / "s.jsonl", [
        assistant("2026-03-01T10:00:00Z", usage(100), message_id="a", request_id="a"),
        assistant("2026-03-03T10:00:00Z", usage(100), message_id="b", request_id="b"),
    ])  # fmt: skip
    done = cli("usage", "--since", "20260302", "--until", "2026-03-04", "--timezone", "UTC",
               "--json", env=_env(tmp_path))  # fmt: skip
    assert [r["label"] for r in json.loads(done.stdout)["rows"]] == ["2026-03-03"]
    table = cli("usage", "--by", "block", env=_env(tmp_path))
    assert table.returncode == 0 and "total" in table.stdout and "$" in table.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--path", "/no/such/folder"],
        ["--since", "March"],
        ["--timezone", "Mars/Olympus"],
        ["--by", "year"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli: CliRun, tmp_path: Path, args: list[str]) -> None:
    done = cli("usage", *args, env=_env(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ipse: error:")


def test_a_file_that_is_no_session_is_refused(cli: CliRun, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    done = cli("usage", "--path", str(other), env=_env(tmp_path))
    assert done.returncode == 2 and "not a session file" in done.stderr


@SHARED
def test_losses_are_replayed_once_and_kept(cli: CliRun, shared_data: Path, tmp_path: Path) -> None:
    shared_history(shared_data, tmp_path)
    before = json.loads(cli("usage", "--json", env=_env(tmp_path)).stdout)
    assert before["sessions_replayed"] == 0 and before["sessions_not_replayed"] > 0
    done = cli("usage", "--json", "--losses", "--by", "model", env=_env(tmp_path))
    after = json.loads(done.stdout)
    assert after["sessions_not_replayed"] == 0
    assert after["total"]["cache_lost_usd"] > 0 and after["total"]["cache_lost_by_cause"]
    kept = json.loads(cli("usage", "--json", "--by", "model", env=_env(tmp_path)).stdout)
    assert kept["total"]["cache_lost_by_cause"] == after["total"]["cache_lost_by_cause"]


def _statusline(stdin: bytes, home: Path) -> subprocess.CompletedProcess[bytes]:
    """The ``ipse`` executable's entry, as Claude Code runs it."""
    code = "import sys; sys.argv = ['ipse', 'usage', 'statusline']; " \
           "from ipse.cli._entry import entry; entry()"  # fmt: skip
    return subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                          check=False, timeout=60, env={**__import__("os").environ,
                                                        "IPSE_HOME": str(home)})  # fmt: skip


def test_the_status_line_at_a_sessions_start(tmp_path: Path) -> None:
    done = _statusline(json.dumps(STARTING).encode(), tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "context -"


def test_the_status_line_of_a_session_and_after_an_append(tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / "s.jsonl", [
        assistant("2026-03-01T10:00:00Z", usage(9000, 1000, 0, 100), message_id="a",
                  request_id="a"),
    ])  # fmt: skip
    stdin = {**STARTING, "transcript_path": str(transcript)}
    stdin["context_window"] = {**STARTING["context_window"], "context_window_size": 200000}  # type: ignore[dict-item]
    first = _statusline(json.dumps(stdin).encode(), tmp_path / "home").stdout.decode()
    cost = (9000 * 0.5 + 1000 * 6.25 + 100 * 25) / 1e6
    assert first.strip() == f"context 10k/200k (5%) | ${cost:,.2f} this session | cache hit 90%"
    write_jsonl(transcript, [
        assistant("2026-03-01T10:01:00Z", usage(20000, 0, 0, 100), message_id="b",
                  request_id="b"),
    ], append=True)  # fmt: skip
    second = _statusline(json.dumps(stdin).encode(), tmp_path / "home").stdout.decode()
    assert second.startswith("context 20k/200k (10%)") and "cache hit 97%" in second


def test_the_status_line_says_what_the_last_usage_run_found_ipse_saved(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("IPSE_HOME", str(home))
    exchange = {"ts": "2026-03-01T10:00:00+00:00",
                "request": {"method": "POST", "url": "/v1/messages",
                            "body": {"model": "claude-opus-4-6", "messages": []}},
                "response": {"status": 200, "headers": {"request-id": "req_1"},
                             "body": {"id": "msg_1", "usage": usage(100)}},
                "ipse": {"provider": "anthropic", "conversation": "c1",
                         "handoff": {"applied": True, "anchor": "t1",
                                     "saved": {"tokens": 2_000_000, "bytes": 9}}}}  # fmt: skip
    record = write_jsonl(tmp_path / "record.jsonl", [exchange])
    assert cli("usage", "--path", str(record)).returncode == 0
    line = _statusline(json.dumps(STARTING).encode(), home).stdout.decode().strip()
    assert line == "context - | ipse saved $1.00"  # 2M tokens at opus 4.6's read price


def test_the_status_line_through_click_is_the_same(cli: CliRun, tmp_path: Path) -> None:
    done = cli("usage", "statusline", input=json.dumps(STARTING))
    assert done.returncode == 0 and done.stdout.strip() == "context -"
