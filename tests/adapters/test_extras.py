"""Each adapter is an extra: importing ipse (or ipse.adapters) imports no framework, and an
adapter whose framework is missing says which extra to install."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from ipse.errors import MissingExtra

ADAPTERS = [
    ("ipse.adapters.langchain", "langchain", "langchain"),
    ("ipse.adapters.openai_agents", "agents", "openai-agents"),
    ("ipse.adapters.anthropic", "anthropic", "anthropic"),
    ("ipse.adapters.litellm", "litellm", "litellm"),
]


def test_importing_the_package_imports_no_framework() -> None:
    code = (
        "import sys, ipse, ipse.adapters, ipse.handoff\n"
        "print([m for m in ('langchain', 'langgraph', 'agents', 'anthropic', 'litellm')"
        " if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("module", "framework", "extra"), ADAPTERS)
def test_a_missing_framework_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, framework: str, extra: str
) -> None:
    loaded = [m for m in sys.modules if m == framework or m.startswith(framework + ".")]
    for name in {framework, *loaded}:
        monkeypatch.setitem(sys.modules, name, None)  # what an absent package looks like
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module(module)
    assert f"pip install 'ipse[{extra}]'" in str(caught.value)
    assert caught.value.exit_code == 2
