"""The documentation's Python runs as written, and its API reference covers the public API.

Every ```python block of README.md and docs/*.md runs in a fresh scratch folder holding a copy
of the checkout's ``examples/`` (so a block runs as written from the repository's root), with
``IPSE_HOME`` there, and must exit 0. The API reference pages (docs/api/) name each public
package and lists exactly what each public module exports (``__all__``): the pages are written
from it (``python -m tests.support.api_pages``), and none renders empty.
The site itself is built by ``mkdocs build --strict`` in .ci/run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

from tests.conftest import REPO
from tests.support import api_pages

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
API = REPO / "docs" / "api"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


BLOCKS = [
    pytest.param(block, id=f"{page.name}-{n}")
    for page in PAGES
    for n, block in enumerate(_python_blocks(page.read_text(encoding="utf-8")), 1)
]


def test_every_mechanism_has_a_python_example_in_the_readme() -> None:
    blocks = _python_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    for package in ("ipse.handoff", "ipse.prefix", "ipse.twin", "ipse.statedir"):
        short = package.rsplit(".", 1)[1]
        assert any(package in b or f"from ipse import {short}" in b for b in blocks), package


@pytest.mark.parametrize("block", BLOCKS)
def test_every_python_block_runs_as_written(block: str, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {key: value for key, value in os.environ.items() if not key.startswith("IPSE_")}
    env.update(
        IPSE_HOME=str(tmp_path / "ipse-home"),
        HOME=str(tmp_path / "user-home"),
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [sys.executable, "-c", block],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "an example shows its result"


def _public_packages() -> set[str]:
    src = REPO / "src" / "ipse"
    return {
        f"ipse.{init.parent.name}"
        for init in src.glob("*/__init__.py")
        if not init.parent.name.startswith("_") and init.parent.name != "cli"
    }


def _documented() -> dict[str, list[str]]:
    """Each ``::: module`` directive of the API pages -> the members it lists."""
    found: dict[str, list[str]] = {}
    for page in API.glob("*.md"):
        parts = re.split(r"^::: (\S+)\n", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
        for module, options in zip(parts[1::2], parts[2::2], strict=True):
            found[module] = re.findall(r"^ +- (\S+)$", options, flags=re.MULTILINE)
    return found


def test_every_public_package_has_an_api_reference_page() -> None:
    assert _public_packages() <= set(_documented())


def test_the_api_pages_are_written_from_the_modules_all() -> None:
    """docs/api/ is what ``python -m tests.support.api_pages`` writes: run it after changing
    an ``__all__``."""
    written = api_pages.pages()
    assert {p.name: p.read_text(encoding="utf-8") for p in API.glob("*.md")} == written


def test_every_public_name_is_in_the_api_reference() -> None:
    documented = _documented()
    for module in api_pages.public_modules():
        exported = [n for n in api_pages.exported(module) if n != "__version__"]
        assert documented.get(module, []) == exported, module


def test_no_api_page_renders_empty() -> None:
    """Every page lists members, and the docs generator (griffe, read statically as
    mkdocstrings reads it) finds each one in its module: a lazy package's names, which it sees
    only through their ``TYPE_CHECKING`` imports, included."""
    loader = griffe.GriffeLoader(search_paths=[str(REPO / "src")])
    for page in API.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        members = re.findall(r"^ +- (\S+)$", text, flags=re.MULTILINE)
        assert members, f"{page.name} renders no member"
    for module, members in _documented().items():
        found = loader.load(module)
        for member in members:
            assert member in found.members, f"{module}.{member} is not seen by the docs"


def test_the_site_lists_every_page_it_builds() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert pages == set(re.findall(r": (\S+\.md)$", nav, flags=re.MULTILINE))


def test_the_examples_readme_lists_every_runnable_script() -> None:
    text = (REPO / "examples" / "README.md").read_text(encoding="utf-8")
    section = text.split("## Runnable scripts\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+)`", section, flags=re.MULTILINE))
    examples = REPO / "examples"
    scripts = {p.relative_to(examples).as_posix() for p in examples.rglob("*.py")}
    scripts |= {p.relative_to(examples).as_posix() for p in examples.rglob("config.yaml")}
    assert listed == scripts


def test_every_link_of_the_readme_points_into_the_checkout() -> None:
    """The site's links are checked by ``mkdocs build --strict``; the README is not in it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 10
    for link in links:
        assert "://" in link or (REPO / link).exists(), link
