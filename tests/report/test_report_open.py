"""``ipse report --open`` where no browser can be found says so on stderr, with the page's
path, instead of doing nothing; the handoff table says what its pay-back counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ipse.report import collect, render
from tests.report.build import write_log


def test_open_without_a_browser_says_so(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    page = tmp_path / "page.html"
    env = {k: v for k, v in os.environ.items() if k not in ("BROWSER", "DISPLAY")}
    env.pop("WAYLAND_DISPLAY", None)
    env["PATH"] = str(Path(sys.executable).parent)  # no xdg-open, no browser on it
    done = subprocess.run(
        [sys.executable, "-m", "ipse", "report", str(log), "-o", str(page), "--open"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert page.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no browser" in lines[0] and str(page) in lines[0]


def test_pay_back_has_its_unit(tmp_path: Path) -> None:
    data = collect(str(write_log(tmp_path / "log.jsonl", turns=30)))
    turns = data.checkpoints[0].break_even_turns
    assert turns is not None and turns > 1
    table = render(data).split("pays back after", 1)[1].split("</table>", 1)[0]
    assert f"<td>{turns} requests</td>" in table
