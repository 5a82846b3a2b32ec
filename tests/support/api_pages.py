"""The API reference pages (docs/api/), written from the public modules' ``__all__``.

Each public package has one page; its public submodules that export names (``__all__``) are on
its page after it, each under its own heading. Every ``:::`` directive lists its members from
``__all__``, so a page renders what the module exports, lazy packages included (their
``__all__`` is made at run time, which the docs generator cannot read), and never nothing.
``ipse.cli`` has none: the command line's reference is ``ipse --help`` and the pages of the
site. `tests/test_docs.py` checks the pages are what this writes.

    python -m tests.support.api_pages    # rewrite docs/api/*.md
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
API = REPO / "docs" / "api"
HEADER = "<!-- written by `python -m tests.support.api_pages` from the modules' __all__ -->"


def public_modules() -> list[str]:
    """Every module under src/ipse whose dotted name has no part starting with ``_``, the
    command line's (``ipse.cli``) left out."""
    found: list[str] = []
    for path in sorted((SRC / "ipse").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts) or parts[1:2] == ["cli"]:
            continue
        found.append(".".join(parts))
    return found


def exported(module: str) -> list[str]:
    """The module's ``__all__`` (empty where it has none): the literal where it is one, read
    without importing the module (an adapter's SDK is slow to import), else (a lazy package's,
    made at run time from its table) the imported module's."""
    base = SRC / Path(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "__all__":
            if isinstance(value, ast.List):
                return [str(ast.literal_eval(item)) for item in value.elts]
            break
    return list(getattr(importlib.import_module(module), "__all__", ()))


def page_of(module: str) -> str:
    """The page a module is documented on: its package's (``ipse.X``), or ``ipse``'s own."""
    parts = module.split(".")
    return "ipse" if len(parts) == 1 else parts[1]


def pages() -> dict[str, str]:
    """Page file name -> its text, for every public module that exports a name."""
    grouped: dict[str, list[str]] = {}
    for module in public_modules():
        if module == "ipse" or (SRC / Path(*module.split(".")) / "__init__.py").exists():
            grouped.setdefault(page_of(module), []).insert(0, module)
        elif exported(module):
            grouped.setdefault(page_of(module), []).append(module)
    texts: dict[str, str] = {}
    for name, modules in grouped.items():
        lines = [f"# {modules[0]}", "", HEADER, ""]
        for n, module in enumerate(modules):
            lines += _directive(module, first=n == 0)
        texts[f"{name}.md"] = "\n".join(lines).rstrip("\n") + "\n"
    return texts


def _directive(module: str, first: bool) -> list[str]:
    names = exported(module)
    lines = [f"::: {module}", "    options:"]
    if not first:
        lines.append("      show_root_heading: true")
    if names:
        lines.append("      members:")
        lines += [f"        - {name}" for name in names if name != "__version__"]
    else:
        lines.append("      members: false")
    return [*lines, ""]


def main() -> int:
    sys.path.insert(0, str(SRC))
    written = pages()
    for old in API.glob("*.md"):
        if old.name not in written:
            old.unlink()
    for name, text in written.items():
        (API / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(written)} pages to {API.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
