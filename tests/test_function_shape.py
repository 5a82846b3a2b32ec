"""Functions in src/ stay short: none over 80 lines, and the lint step refuses complex or long
ones (ruff's C901 and PLR0915, configured in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 80


def _shape() -> ModuleType:
    """bench/function_shape.py, the script that measures what this test holds."""
    spec = importlib.util.spec_from_file_location(
        "function_shape", REPO / "bench/function_shape.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_function_in_src_is_longer_than_80_lines() -> None:
    long = [
        f"{file}:{line} {name} ({span} lines)"
        for file, name, line, span in _shape().lengths()
        if span > MAX_LINES
    ]
    assert long == [], "split by meaning into named helpers:\n" + "\n".join(long)


def test_the_lint_step_limits_complexity_and_statements_in_src() -> None:
    lint = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"C901", "PLR0915"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 20
    # a function with 21 branches and 60 statements, as if in src/: both rules fire
    branches = "".join(f"    if x == {i}:\n        y = {i}\n" for i in range(21))
    statements = "".join(f"    z{i} = {i}\n" for i in range(20))
    source = f"def f(x: int) -> None:\n    y = 0\n{branches}{statements}    print(y)\n"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "--stdin-filename",
            str(REPO / "src/ipse/example.py"),
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 1
    assert "C901" in done.stdout and "PLR0915" in done.stdout, done.stdout + done.stderr
