"""Private modules stay private: no module in ``src/ipse`` imports another package's ``_module``.

The rule: a module whose name has an underscored part (``ipse.transcript._stats``,
``ipse.transcript._formats.codex``) belongs to the package that holds its first such part
(``ipse.transcript``), and only modules inside that package may import it; everyone else
imports the package's public names, or what the package shares with its siblings: its
``_shared`` module (``ipse.transcript._shared``), which holds the names other parts of ipse use
that are not the package's public API. ``ipse._lazy``, ``ipse._plain``, ``ipse._notes``... belong
to ``ipse`` itself, which holds every module: they are the library's shared helpers. Imports
inside functions and ``TYPE_CHECKING`` blocks count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ipse

SRC = Path(ipse.__file__).parent

# (importing module, imported private module): why the package's public names will not do.
ALLOWED = {
    ("ipse.cli._entry", "ipse.mcp._stdio"): (
        "the executable's fast path for the stdio MCP server answers before a harness talks: "
        "ipse.mcp's __init__ imports typing at run time, which the fast path must not pay"
    ),
}


def _module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of the module at ``path`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    package = parts[-1] == "__init__"
    if package:
        parts.pop()
    return ".".join(parts), package


def _imported(tree: ast.Module, name: str, package: bool) -> list[tuple[int, str]]:
    """Every module (or module-qualified name) an import in ``tree`` names, absolute."""
    here = name.split(".") if package else name.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _private_owner(target: str) -> tuple[str, str] | None:
    """For a name under ipse that passes through a private module: (the private module, the
    package that owns it); None for public names."""
    parts = target.split(".")
    if parts[0] != "ipse":
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part == "_shared" and i > 1:
            return None  # a package's names for its siblings
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: i + 1]), ".".join(parts[:i])
    return None


def crossings() -> set[tuple[str, str, int]]:
    """(importing module, private module, line) for every import across a package boundary."""
    found: set[tuple[str, str, int]] = set()
    for path in sorted(SRC.rglob("*.py")):
        name, package = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in _imported(tree, name, package):
            private = _private_owner(target)
            if private is None:
                continue
            module, owner = private
            if name != owner and not name.startswith(owner + "."):
                found.add((name, module, line))
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    crossing = sorted(c for c in crossings() if (c[0], c[1]) not in ALLOWED)
    assert crossing == [], "import these from the owning package's public names instead"


def test_every_allowed_exception_is_still_needed() -> None:
    used = {(c[0], c[1]) for c in crossings()}
    assert set(ALLOWED) <= used


def test_the_rule_sees_relative_lazy_and_nested_imports() -> None:
    tree = ast.parse(
        "from ._stats import TokenTally\n"
        "def f():\n    from ipse.transcript import _jsonl\n"
        "import ipse.twin._tools\n"
    )
    targets = [t for _, t in _imported(tree, "ipse.transcript._load", package=False)]
    owners = {p for t in targets if (p := _private_owner(t)) is not None}
    assert owners == {
        ("ipse.transcript._stats", "ipse.transcript"),
        ("ipse.transcript._jsonl", "ipse.transcript"),
        ("ipse.twin._tools", "ipse.twin"),
    }
    assert _private_owner("ipse._plain") == ("ipse._plain", "ipse")  # every module is in ipse
    assert _private_owner("ipse.handoff.wire.rewrite_request") is None
    assert _private_owner("ipse.transcript._formats.claude_code") == (
        "ipse.transcript._formats",
        "ipse.transcript",
    )
    assert _private_owner("ipse.transcript._shared.codec") is None  # shared with the siblings
    assert _private_owner("ipse.transcript._shared_x") is not None
