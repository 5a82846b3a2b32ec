"""List the functions in src/ by length, by McCabe complexity (what ruff's C901 counts) and by
radon's cyclomatic complexity.

Run: python bench/function_shape.py [--over LINES] [--top N] [--json]

Length is the span of the definition in lines (decorators excluded, signature and docstring
included; a nested function counts in its parent's span and is listed on its own too).
Complexity is ruff's McCabe count (C901: 1 plus one per branch: if/elif, loops, except, match
cases, comprehension loops), read from ``ruff check --select C901`` with max-complexity 0, so it
is exactly what the lint step enforces. The lint step's own limits are in pyproject.toml.
Radon's count (``radon cc``) adds one for each ``and``/``or`` of a condition, each ``if`` of a
comprehension and each conditional expression, which McCabe leaves out; the lint step holds it
in `tests/test_function_shape.py`.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def lengths() -> list[tuple[str, str, int, int]]:
    """(file, qualified name, first line, length) of every function in src/."""
    rows: list[tuple[str, str, int, int]] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = str(path.relative_to(ROOT))

        rows.extend((rel, name, line, span) for name, line, span in _functions(tree, ""))
    return rows


def _functions(node: ast.AST, prefix: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, length) of the functions under ``node``, nested ones too."""
    found: list[tuple[str, int, int]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{child.name}"
            span = (child.end_lineno or child.lineno) - child.lineno + 1
            found.append((name, child.lineno, span))
            found.extend(_functions(child, f"{name}."))
        elif isinstance(child, ast.ClassDef):
            found.extend(_functions(child, f"{prefix}{child.name}."))
        else:
            found.extend(_functions(child, prefix))
    return found


_C901 = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+):\d+: C901 `[^`]+` is too complex \((?P<n>\d+) > 0\)"
)


def complexities() -> dict[tuple[str, int], int]:
    """(file, line) -> McCabe complexity, from ruff."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "src",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=0",
            "--output-format",
            "concise",
            "--no-cache",
            "--isolated",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    found: dict[tuple[str, int], int] = {}
    for line in out.splitlines():
        m = _C901.match(line)
        if m:
            found[(m["file"], int(m["line"]))] = int(m["n"])
    return found


def radon_complexities() -> list[tuple[str, str, int, int]]:
    """(file, qualified name, first line, radon's complexity) of every function in src/,
    methods and nested functions too."""
    from radon.complexity import cc_visit
    from radon.visitors import Function

    rows: list[tuple[str, str, int, int]] = []

    def visit(block: Function, file: str, name: str) -> None:
        rows.append((file, name, block.lineno, block.complexity))
        for inner in block.closures:
            visit(inner, file, f"{name}.{inner.name}")

    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if isinstance(block, Function):  # (methods come as functions, named by class)
                prefix = f"{block.classname}." if block.classname else ""
                visit(block, rel, f"{prefix}{block.name}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--over", type=int, default=80, help="list functions longer than this")
    parser.add_argument("--top", type=int, default=15, help="also list the N most complex")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = lengths()
    cx = complexities()
    table = [
        {"file": f, "function": n, "line": ln, "lines": span, "complexity": cx.get((f, ln), 1)}
        for f, n, ln, span in rows
    ]
    radon = {(f, ln): n for f, _, ln, n in radon_complexities()}
    for r in table:
        r["radon"] = radon.get((r["file"], r["line"]), 1)
    spans = sorted(r["lines"] for r in table)
    summary = {
        "functions": len(table),
        "median_lines": statistics.median(spans),
        "p90_lines": spans[int(0.9 * (len(spans) - 1))],
        "max_lines": spans[-1],
        f"over_{args.over}_lines": sum(1 for s in spans if s > args.over),
        "max_complexity": max(r["complexity"] for r in table),
        "over_15_complexity": sum(1 for r in table if r["complexity"] > 15),
        "over_20_complexity": sum(1 for r in table if r["complexity"] > 20),
        "radon_20_or_more": sum(1 for r in table if r["radon"] >= 20),
    }
    long_ = sorted((r for r in table if r["lines"] > args.over), key=lambda r: -r["lines"])
    complex_ = sorted(table, key=lambda r: (-r["radon"], -r["complexity"]))[: args.top]
    if args.json:
        print(json.dumps({"summary": summary, "long": long_, "complex": complex_}, indent=1))
        return
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    print(f"\nlonger than {args.over} lines:")
    for r in long_:
        where = f"{r['file']}:{r['line']} {r['function']}"
        print(f"  {r['lines']:4d} lines  cx {r['complexity']:3d}  radon {r['radon']:3d}  {where}")
    print(f"\n{args.top} most complex:")
    for r in complex_:
        where = f"{r['file']}:{r['line']} {r['function']}"
        print(f"  radon {r['radon']:3d}  cx {r['complexity']:3d}  {r['lines']:4d} lines  {where}")


if __name__ == "__main__":
    main()
