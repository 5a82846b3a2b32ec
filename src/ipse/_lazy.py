"""Package names imported on first use (PEP 562): a package lists its modules and the names
each holds, and `exports` gives it the module-level ``__getattr__`` and ``__dir__`` that import
a name's module when the name is first asked for, so a command pays only for the modules it
uses."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping
    from typing import Any


def exports(
    package: str, modules: Mapping[str, tuple[str, ...]], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose globals are ``namespace`` and
    whose lazy names live in its ``modules`` (a module's name within the package -> the
    names it holds)."""
    home = {name: f"{package}.{module}" for module, names in modules.items() for name in names}

    def getattr_(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # (asked once: later lookups find it as a global)
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(home))

    return getattr_, dir_


def public(modules: Mapping[str, tuple[str, ...]], *eager: str) -> list[str]:
    """A lazy package's ``__all__``: every name of its ``modules`` table, and the ``eager`` names
    it imports itself, in the order ruff keeps ``__all__`` in (CONSTANTS, then Classes, then
    functions), so each lazy name is written once for the run time."""
    names = [*eager, *(name for held in modules.values() for name in held)]
    return sorted(
        names, key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name)
    )
