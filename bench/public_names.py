"""Count ipse's public names: every name in the ``__all__`` of every public module under
src/ipse (a module none of whose dotted parts starts with ``_``), per module and in all.

Run: python bench/public_names.py [--json] [--top N]

A name a package re-exports from its public submodule counts in both (each is a place a user
can import it from); ``ipse.cli`` and its modules count like any other. The modules are
read statically (the ``__all__`` literal), so no optional dependency is imported; a lazy
package, whose ``__all__`` is made at run time from its table, is imported. The test that holds
the number is tests/test_public_names.py.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def public_modules() -> list[str]:
    """Every module under src/ipse whose dotted name has no part starting with ``_``."""
    found: list[str] = []
    for path in sorted((SRC / "ipse").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts):
            continue
        found.append(".".join(parts))
    return found


def _static_all(module: str) -> list[str] | None:
    base = SRC / Path(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(name) for name in value]
    return []


def exported(module: str) -> list[str]:
    """The module's ``__all__`` (empty when it has none): the literal where it is one, else
    (a lazy package's, made from its table) the imported module's."""
    static = _static_all(module)
    if static is not None:
        return static
    return list(getattr(importlib.import_module(module), "__all__", ()))


def count() -> dict[str, int]:
    """Module -> how many names its ``__all__`` holds (modules with none left out)."""
    sizes = {module: len(exported(module)) for module in public_modules()}
    return {module: size for module, size in sizes.items() if size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--top", type=int, default=0, help="list the N largest modules")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(SRC))
    sizes = count()
    total = sum(sizes.values())
    if args.json:
        print(json.dumps({"total": total, "modules": sizes}, indent=2))
        return 0
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    for module, size in ranked[: args.top or len(ranked)]:
        print(f"{size:5d}  {module}")
    print(f"{total:5d}  public names in {len(sizes)} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
