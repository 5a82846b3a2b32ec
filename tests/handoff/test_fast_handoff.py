"""The executable's fast path for ``ipse handoff``: the same bytes as the full command line (the
report, the body, the JSON, the exit code and the error line), without importing click, nor rich
when stdout is a pipe; every command line it does not take goes to the full one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ipse.cli._fast_handoff import options
from tests.handoff.build import assistant, call, result, text, user

MESSAGES = [
    user(text("Fix the parser.")),
    assistant(text("Reading it."), call("t1", "Read", file_path="src/parser.py")),
    user(result("t1", "def parse(): ...")),
    assistant(text("Running the tests."), call("t2", "Bash", command="pytest -q")),
    user({**result("t2", "Exit code 1\nFAILED t.py::test_x"), "is_error": True}),
    assistant(text("One fails.")),
]


def _session(tmp_path: Path) -> Path:
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps({"model": "claude-x", "messages": MESSAGES}))
    return path


def _run(module: str, args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IPSE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", module, "handoff", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    "extra",
    [
        ["--at", "now"],
        ["--at=end", "--json"],
        ["--at", "now", "--budget", "40", "--ledger-tokens", "60", "--breadcrumbs"],
        ["--at", "now", "--no-archive", "--keep-blocks", "--session", "s1"],
        ["--at", "99"],  # out of range: exit 2, the same one line
        ["--at", "now", "--format", "anthropic", "--model", "claude-y", "--max-tokens", "7"],
    ],
)
def test_the_fast_path_answers_as_the_full_command_line(tmp_path: Path, extra: list[str]) -> None:
    source = _session(tmp_path)
    done = {}
    for module in ("ipse", "ipse.cli.main"):
        out = tmp_path / f"{module}.json"
        args = [str(source), "-o", str(out), *extra]
        ran = _run(module, args, tmp_path / f"home-{module}")
        stdout = ran.stdout.replace(str(out), "OUT")
        body = out.read_bytes() if out.exists() else None
        done[module] = (ran.returncode, stdout, ran.stderr, body)
    assert done["ipse"] == done["ipse.cli.main"]


def test_the_fast_path_imports_neither_click_nor_rich(tmp_path: Path) -> None:
    source = _session(tmp_path)
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write("
        "'LOADED ' + ' '.join(m for m in ('click', 'rich') if m in sys.modules) + '\\n'))\n"
        f"sys.argv = ['ipse', 'handoff', {str(source)!r}, '--at', 'now', '-o', "
        f"{str(tmp_path / 'out.json')!r}]\n"
        "from ipse.cli._entry import entry\n"
        "entry()\n"
    )
    env = {**os.environ, "IPSE_HOME": str(tmp_path / "home")}
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert "LOADED \n" in ran.stderr  # neither was imported
    assert "tokens" in ran.stdout  # and the report was printed (by the plain console)


@pytest.mark.parametrize(
    "argv",
    [
        ["f.json"],  # no -o: where the body goes depends on the terminal
        ["f.json", "-o", "-"],
        ["f.json", "-o", "x", "--to", "claude-code"],
        ["f.json", "-o", "x", "--help"],
        ["f.json", "-o", "x", "--budget", "0"],
        ["f.json", "-o", "x", "--budget", "many"],
        ["f.json", "-o", "x", "--format", "nothing"],
        ["f.json", "-o", "x", "--at", "now", "--at", "end"],
        ["f.json", "g.json", "-o", "x"],
        ["f.json", "-o"],
        ["f.json", "--json=yes"],
    ],
)
def test_other_command_lines_go_to_the_full_one(argv: list[str]) -> None:
    assert options(argv) is None


def test_the_usual_command_lines_are_taken() -> None:
    taken = options(["s.jsonl", "--at", "now", "-o", "out.json", "--budget=4000", "--json"])
    assert taken == {
        "file": Path("s.jsonl"),
        "at": "now",
        "output": Path("out.json"),
        "budget": 4000,
        "as_json": True,
    }
