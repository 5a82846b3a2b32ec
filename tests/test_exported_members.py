"""Every package's (and public module's) ``__all__`` is sorted and names exactly what it makes
public: no imported helper (``Path``, ``Mapping``, ``InputError``...) leaks out, nothing public
is left unlisted, and no two packages give one name two meanings."""

from __future__ import annotations
import __future__

import importlib
import types

import pytest

PACKAGES = [
    "ipse",
    "ipse.adapters",
    "ipse.agents",
    "ipse.archive",
    "ipse.cli",
    "ipse.handoff",
    "ipse.handoff.effects",
    "ipse.handoff.wire",
    "ipse.mcp",
    "ipse.prefix",
    "ipse.probe",
    "ipse.proxy",
    "ipse.report",
    "ipse._sessions",
    "ipse.statedir",
    "ipse.store",
    "ipse.transcript",
    "ipse.twin",
]


def _public(module: types.ModuleType) -> set[str]:
    """The names a reader sees: not underscored, not a submodule, not ``from __future__``; in a
    plain module (not a package's ``__init__``, which holds only what it exports), not what it
    imports from outside ipse for its own use either (``Mapping``, ``Any``)."""
    package = hasattr(module, "__path__")
    return {
        name
        for name in dir(module)
        if not name.startswith("_")
        and not isinstance(value := getattr(module, name), types.ModuleType | __future__._Feature)
        and (package or str(getattr(value, "__module__", "ipse")).startswith("ipse"))
    }


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in: CONSTANTS, then Classes, then functions."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_names_every_public_member(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(exported) == len(set(exported))
    assert set(exported) - {"__version__"} == _public(module)


def test_no_two_packages_export_different_things_under_one_name() -> None:
    owners: dict[str, tuple[str, object]] = {}
    for name in PACKAGES[1:]:
        module = importlib.import_module(name)
        for member in module.__all__:
            value = getattr(module, member)
            if member in owners:
                first, seen = owners[member]
                assert value is seen, f"{member} means different things in {first} and {name}"
            else:
                owners[member] = (name, value)
