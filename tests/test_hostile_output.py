"""Conversation data printed by the CLI is text, never markup or terminal control.

Every command that prints data is run on input holding rich markup (``[/]`` crashed the
renderer), escape sequences (clear screen, window title), a bidi override and a C1 control;
the output must hold none of the raw controls, show the markup literally, and exit normally.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HOSTILE = "evil[/]\x1b[2J\x1b]0;pwned\x07[bold]x\u202eY\x9b"
RAW_CONTROLS = ("\x1b", "\x07", "\u202e", "\x9b")
SECRET = "sk-live-4f8a9b2c7d"
ROTATED = "sk-live-99zz88yy77"


def ipse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "400"},
        timeout=120,
        check=False,
    )


def assert_safe(done: subprocess.CompletedProcess[str], code: int = 0) -> str:
    out = done.stdout + done.stderr
    assert done.returncode == code, out
    assert "Traceback" not in out and "MarkupError" not in out
    for control in RAW_CONTROLS:
        assert control not in out, (control, out)
    return out


def request(**extra: Any) -> dict[str, Any]:
    tool = {"name": HOSTILE, "description": "d", "input_schema": {"type": "object"}}
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You help.",
        "tools": [tool],
        "messages": [
            {"role": "user", "content": f"hi {HOSTILE}"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "ok"},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": HOSTILE,
                        "input": {"command": f"curl -H 'Authorization: {SECRET}' {HOSTILE}"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": HOSTILE}],
            },
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "next"},
        ],
        **extra,
    }


@pytest.fixture
def req(tmp_path: Path) -> Path:
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request()))
    return path


def test_inspect(req: Path) -> None:
    out = assert_safe(ipse("inspect", str(req)))
    assert "evil[/]\\x1b[2J\\x1b]0;pwned\\x07[bold]x\\u202eY\\x9b" in out


def _archived(req: Path) -> str:
    out = req.with_name("handed-off.json")
    done = ipse("handoff", str(req), "--at", "now", "-o", str(out))
    assert done.returncode == 0, done.stderr
    listed = json.loads(ipse("archive", "list", "--json").stdout)
    session: str = listed["sessions"][0]["session"]
    return session


def test_archive_list_shows_data_as_text_and_hides_argument_values(req: Path) -> None:
    session = _archived(req)
    out = assert_safe(ipse("archive", "list", session))
    assert "evil[/]" in out and SECRET not in out and "sha256:" in out
    shown = assert_safe(ipse("archive", "list", session, "--show-values"))
    assert SECRET in shown
    hidden = json.loads(ipse("archive", "list", session, "--json").stdout)
    assert SECRET not in json.dumps(hidden) and hidden["items"][0]["preview"].startswith("<")
    revealed = json.loads(ipse("archive", "list", session, "--json", "--show-values").stdout)
    assert SECRET in revealed["items"][0]["preview"]


def test_recall_on_a_terminal_escapes_controls_and_piped_keeps_the_bytes(req: Path) -> None:
    _archived(req)
    piped = ipse("recall", "toolu_01")
    assert piped.returncode == 0 and json.loads(piped.stdout.splitlines()[0])["name"] == HOSTILE
    parent, child = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "ipse.cli.main", "recall", "toolu_01"],
        stdout=child,
        stderr=subprocess.PIPE,
        env={**os.environ},
        timeout=60,
        check=False,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(parent)
    text = b"".join(chunks).decode("utf-8")
    assert done.returncode == 0 and "toolu_01" in text
    assert not any(c in text for c in RAW_CONTROLS[2:])  # JSON escapes the C0 ones already


def test_twin_show_and_history(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twins.db'}"
    turn = tmp_path / "turn.jsonl"
    records = [
        {"op": "set_counterparty", "account": HOSTILE},
        {"op": "establish_fact", "text": HOSTILE},
        {"op": "make_commitment", "text": HOSTILE},
        {"op": "open_loop", "text": HOSTILE},
    ]
    turn.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    applied = ipse("twin", "apply", "ada", str(turn), "--store", url, "--holder", HOSTILE)
    assert applied.returncode == 0, applied.stderr
    out = assert_safe(ipse("twin", "show", "ada", "--store", url))
    assert out.count("evil[/]") == 4
    out = assert_safe(ipse("twin", "history", "ada", "--store", url))
    assert "evil[/]" in out


def _prefix_log(tmp_path: Path) -> Path:
    first = request(system=f"You help. token={SECRET}", model=f"m{HOSTILE}")
    second = request(system=f"You help. token={ROTATED}", model=f"m{HOSTILE}")
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (first, second)) + "\n")
    return path


def test_prefix_hides_changed_values_unless_asked(tmp_path: Path) -> None:
    log = _prefix_log(tmp_path)
    out = assert_safe(ipse("prefix", str(log), "--provider", "anthropic"))
    assert "system_changed" in out and "sha256:" in out and "99zz88yy77" not in out
    assert "evil[/]" in out  # the model name, as text
    document = json.loads(ipse("prefix", str(log), "--provider", "anthropic", "--json").stdout)
    assert "99zz88yy77" not in json.dumps(document)
    shown = assert_safe(ipse("prefix", str(log), "--provider", "anthropic", "--show-values"))
    assert "99zz88yy77" in shown
    revealed = ipse("prefix", str(log), "--provider", "anthropic", "--json", "--show-values")
    values = [r["value"] for r in json.loads(revealed.stdout)["requests"] if r["value"]]
    assert values == ["99zz88yy77"]


def test_lint_hides_volatile_values_unless_asked(tmp_path: Path) -> None:
    uuid = "3f2a9c1e-7b4d-4e8a-9f00-1234567890ab"
    body = request(system=f"You help. Session {uuid}.")
    body["tools"] = body["tools"] * 2  # listed twice: the names are printed
    path = tmp_path / "req.json"
    path.write_text(json.dumps(body))
    out = assert_safe(ipse("lint", str(path)), code=1)
    assert "volatile_system" in out and uuid not in out and "evil[/]" in out
    assert uuid in assert_safe(ipse("lint", str(path), "--show-values"), code=1)
    document = json.loads(ipse("lint", str(path), "--json").stdout)
    assert uuid not in json.dumps(document)


def test_state_resume(tmp_path: Path) -> None:
    folder = str(tmp_path / "state")
    assert ipse("state", "init", "--goal", HOSTILE, "--dir", folder).returncode == 0
    assert ipse("state", "next", HOSTILE, "--dir", folder).returncode == 0
    assert ipse("state", "invariant", HOSTILE, "--reason", HOSTILE, "--dir", folder).returncode == 0
    out = assert_safe(ipse("state", "resume", "--dir", folder))
    assert out.count("evil[/]") >= 3


def test_warnings_are_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps({"type": "user"}) + "\n" + f"{HOSTILE}\n")
    done = ipse("inspect", str(path), "--skip-bad-lines")
    for control in RAW_CONTROLS:
        assert control not in done.stdout + done.stderr
