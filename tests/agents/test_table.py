"""One table of agent CLIs: no module outside it branches on an agent CLI's name or lists the
names itself; everything asks the table (`ipse.agents._table`) or the agent's module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import ipse
from ipse.agents import AGENTS

SRC = Path(ipse.__file__).parent
TABLE = SRC / "agents" / "_table.py"


def _names_in(node: ast.AST) -> set[str]:
    return {
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in AGENTS
    }


def _words(node: ast.AST) -> set[str]:
    words = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            words.add(n.id.lower())
        elif isinstance(n, ast.Attribute):
            words.add(n.attr.lower())
    return words


def agent_branches(source: str) -> Iterator[str]:
    """Where ``source`` compares something it calls an agent with an agent CLI's name, or
    binds a name it calls an agent to a literal holding agent CLI names."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(_names_in(s) for s in sides)
            if named and any("agent" in w for s in sides for w in _words(s)):
                yield f"{node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _names_in(node.value) and any("agent" in w for t in targets for w in _words(t)):
                yield f"{node.lineno}: {ast.unparse(node).splitlines()[0]}"


def test_the_scan_finds_what_it_forbids() -> None:
    forbidden = {
        'if agent == "codex": pass': 1,
        'x = "gemini" != self.agent': 1,
        'if agent in ("claude-code", "gemini"): pass': 1,
        'AGENT_FILES = {"claude-code": "CLAUDE.md"}': 1,
        'AGENTS = click.Choice(["claude-code", "codex"])': 1,
        'if target == "claude-code": pass': 0,  # a handoff's target format, not an agent CLI
        'if kind == "gemini": pass': 0,
        "AGENTS = click.Choice([*AGENT_NAMES, 'generic'])": 0,
    }
    for source, count in forbidden.items():
        assert len(list(agent_branches(source))) == count, source


def test_no_module_outside_the_table_branches_on_an_agent_name() -> None:
    found = [
        f"{path.relative_to(SRC)}:{hit}"
        for path in sorted(SRC.rglob("*.py"))
        if path != TABLE
        for hit in agent_branches(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "ask the agent table (ipse.agents) instead:\n" + "\n".join(found)
