"""The executable's fast path for the SessionStart hook: the same answer as the full command line,
without importing click; every other command line goes to the full one."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ipse.cli._entry import hook_folder
from ipse.statedir import init


def _run(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--hook", "claude-code"),
        ("--hook=claude-code", "--dir", "state"),
        ("--dir=elsewhere", "--hook", "claude-code"),
        ("--hook", "claude-code", "--dir", "missing"),
    ],
)
def test_fast_answer_is_the_full_command_lines_answer(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    init(tmp_path / "state", "Port the parser", "the tests pass")
    init(tmp_path / "elsewhere", "Another goal", "")
    fast = _run("ipse", "state", "resume", *args, cwd=tmp_path)
    full = _run("ipse.cli.main", "state", "resume", *args, cwd=tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )
    assert fast.returncode == 0
    assert ("Port the parser" in fast.stdout) == ("state" in args or len(args) == 2)


# What the hook must not import: the command-line framework, the readers, and the standard
# library's heavier modules (dataclasses brings inspect; hashlib loads OpenSSL). What each
# would add: python bench/edge_tricks.py; the rule: docs/development.md, "Speed at the edges".
_NOT_ON_THE_HOOK = (
    "click",
    "ipse.transcript",
    "typing",
    "dataclasses",
    "inspect",
    "hashlib",
    "hmac",
    "secrets",
    "datetime",
    "logging",
)


def test_the_hook_does_not_import_click(tmp_path: Path) -> None:
    init(tmp_path / "state", "Port the parser", "the tests pass")
    code = (
        "import sys; sys.argv = ['ipse', 'state', 'resume', '--hook', 'claude-code']; "
        "before = set(sys.modules); "  # (what the interpreter's site setup imported)
        "from ipse.cli._entry import entry; entry(); "
        f"print(sorted((set(sys.modules) - before) & set({_NOT_ON_THE_HOOK!r})), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert b"Port the parser" in done.stdout
    assert done.stderr.strip() == b"[]"


def _hook_modules(folder: Path) -> set[str]:
    """The modules of ipse the hook imports."""
    code = (
        "import sys; sys.argv = ['ipse', 'state', 'resume', '--hook', 'claude-code']; "
        "from ipse.cli._entry import entry; entry(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ipse'), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))


# How a module keeps `typing`, `dataclasses` and `hashlib` away from the hook's start
_HOOK_TRICKS = re.compile(
    r"^_?TYPE_CHECKING = False|^from ipse\._plain import|^from ipse\._sha256 import", re.M
)


def test_the_hook_s_tricks_stay_on_the_hook_s_path(tmp_path: Path) -> None:
    """Only the modules the hook imports may write around `typing`, `dataclasses` and
    `hashlib`: everywhere else the plain forms (``from typing import``, ``@dataclass``,
    `hashlib`)."""
    init(tmp_path / "state", "Port the parser", "the tests pass")
    src = Path(__file__).resolve().parents[1] / "src"
    tricked = set()
    for path in src.rglob("*.py"):
        if _HOOK_TRICKS.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(src).with_suffix("").parts
            tricked.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert tricked, "the pattern finds the hook's modules"
    assert tricked - _hook_modules(tmp_path) == set()


def test_a_file_as_the_folder_is_reported_by_the_full_command_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    done = _run("ipse", "state", "resume", "--hook", "claude-code", "--dir", "afile", cwd=tmp_path)
    assert done.returncode == 2 and "is a file" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["state", "resume"],
        ["state", "resume", "--hook", "claude-code", "--json"],
        ["state", "resume", "--hook", "claude-code", "--budget", "100"],
        ["state", "resume", "--hook", "other"],
        ["state", "resume", "--hook", "claude-code", "--hook", "claude-code"],
        ["state", "resume", "--hook"],
        ["state", "resume", "--hook", "claude-code", "--dir"],
        ["state", "resume", "--hook", "claude-code", "--dir", "--json"],
        ["state", "checkpoint", "--hook", "claude-code", "x"],
        ["--help"],
    ],
)
def test_other_command_lines_go_to_the_full_one(argv: list[str]) -> None:
    assert hook_folder(argv) is None


def test_the_folder_comes_from_dir_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IPSE_STATE_DIR", raising=False)
    hook = ["state", "resume", "--hook", "claude-code"]
    assert hook_folder(hook) == Path("state")
    assert hook_folder([*hook, "--dir", "x"]) == Path("x")
    monkeypatch.setenv("IPSE_STATE_DIR", "from-env")
    assert hook_folder(hook) == Path("from-env")
    assert hook_folder([*hook, "--dir=x"]) == Path("x")


@pytest.mark.parametrize(
    ("argv", "collecting"),
    [
        (["prefix", "s.jsonl"], False),
        (["--version"], False),
        (["proxy", "serve"], True),
        (["mcp", "--transport", "stdio"], True),
    ],
)
def test_one_shot_commands_run_without_the_cyclic_collector(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], collecting: bool
) -> None:
    """A command that runs once keeps its input until it exits: the collector would only walk
    it again and again. The servers keep collecting."""
    import gc

    from ipse.cli import main as cli_main

    seen: list[bool] = []
    monkeypatch.setattr(sys, "argv", ["ipse", *argv])
    monkeypatch.setattr(cli_main, "main", lambda: seen.append(gc.isenabled()))
    monkeypatch.setattr(cli_main, "default_sigpipe", lambda: None)  # this process keeps its own
    monkeypatch.setattr("ipse.cli._lifetime._kept", None)  # (restored: nothing kept after it)
    try:
        cli_main.entry()
    finally:
        gc.enable()
    assert seen == [collecting]
