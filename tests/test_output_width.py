"""Human output is laid out for where it goes: piped or redirected, no line is wrapped at
80 columns; ``COLUMNS`` still sets the width when given."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import EXAMPLE_SESSION, CliRun

NOTE = "tokens counted with o200k_base (approximate for"


def _note_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("tokens counted"))


def test_piped_output_is_not_wrapped(cli: CliRun) -> None:
    done = cli("inspect", str(EXAMPLE_SESSION), env={"COLUMNS": None})
    assert done.returncode == 0
    line = _note_line(done.stdout)
    assert line.startswith(NOTE) and len(line) > 80
    assert line.rstrip().endswith("is not public)")


def test_columns_sets_the_width(cli: CliRun) -> None:
    done = cli("inspect", str(EXAMPLE_SESSION), env={"COLUMNS": "40"})
    assert done.returncode == 0
    assert all(len(line) <= 40 for line in done.stdout.splitlines())


def test_the_real_executable_piped_is_not_wrapped() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "inspect", str(EXAMPLE_SESSION)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _note_line(done.stdout).rstrip().endswith("is not public)")


def test_columns_zero_is_not_a_width(cli: CliRun) -> None:
    """``COLUMNS=0`` (exported by some environments) does not make the output vanish."""
    done = cli("inspect", str(EXAMPLE_SESSION), env={"COLUMNS": "0"})
    assert done.returncode == 0
    assert _note_line(done.stdout).rstrip().endswith("is not public)")


def test_a_terminal_encoding_without_the_characters_gets_escapes(tmp_path: object) -> None:
    """Under a Latin-1 locale, a tool named in Japanese is printed as escapes, and a long
    table is drawn in ASCII, instead of ending the command with an encoding error."""
    import json
    from pathlib import Path

    folder = Path(str(tmp_path))
    messages: list[object] = [{"role": "user", "content": "日本語"}]
    for n in range(260):  # a long table of messages
        messages += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "検索", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}],
            },
        ]
    path = folder / "body.json"
    path.write_text(json.dumps({"model": "claude-sonnet-4-5", "messages": messages}))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONIOENCODING"] = "latin-1"
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "inspect", str(path), "--messages"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("latin-1")
    assert "\\u691c\\u7d22" in text  # the tool's name, escaped
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert any(line.split("|")[1].strip() == "520" for line in rows)  # the last message's row
    assert "\u2503" not in text  # drawn in ASCII
