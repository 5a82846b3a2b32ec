"""``-o`` into a folder that does not exist is refused in one line naming the path (exit 2),
before any work, and no folder is made: a mistyped path used to make the whole tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SESSION, CliRun


@pytest.mark.parametrize(
    "command",
    [
        ["handoff", str(EXAMPLE_SESSION), "--at", "now", "-o", "{OUT}"],
        ["report", str(EXAMPLE_SESSION), "-o", "{OUT}"],
        ["twin", "export", "t1", "-o", "{OUT}"],
    ],
    ids=["handoff", "report", "twin-export"],
)
def test_an_output_in_a_missing_folder_is_refused_and_no_folder_is_made(
    command: list[str], tmp_path: Path, cli: CliRun
) -> None:
    assert cli("twin", "init", "t1").returncode == 0
    out = tmp_path / "no" / "such" / "folder" / "out.json"
    done = cli(*[part.replace("{OUT}", str(out)) for part in command])
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"ipse: error: {out}: cannot write: the folder {out.parent} does not exist"
    )
    assert not (tmp_path / "no").exists()


def test_an_output_in_a_folder_that_exists_is_written(tmp_path: Path, cli: CliRun) -> None:
    out = tmp_path / "page.html"
    assert cli("report", str(EXAMPLE_SESSION), "-o", str(out)).returncode == 0
    assert out.read_bytes().startswith(b"<!doctype html>")
