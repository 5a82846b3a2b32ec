"""Kinds of the public value classes: how many of the classes the public packages export are
``@dataclass``, ``msgspec.Struct``, hand-slotted (``__slots__`` without either: the SessionStart
hook's `ipse._plain.Plain` classes) or something else, and which. Also the size of each
package's ``__all__``.

Run: ``python bench/kinds.py`` (``-v`` lists every class of each kind).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
from collections import defaultdict

import msgspec

from ipse._plain import Plain

PACKAGES = [
    "ipse",
    "ipse.handoff",
    "ipse.handoff.wire",
    "ipse.prefix",
    "ipse.twin",
    "ipse.statedir",
    "ipse.transcript",
    "ipse.report",
    "ipse.proxy",
    "ipse.archive",
    "ipse.store",
    "ipse.probe",
    "ipse.mcp",
    "ipse.agents",
]


def kind(cls: type) -> str | None:
    """The kind of a public value class, or None for what is not one (an exception, an enum,
    a protocol, a class with behaviour rather than a value)."""
    if issubclass(cls, BaseException | enum.Enum):
        return None
    if issubclass(cls, msgspec.Struct):
        return "msgspec.Struct"
    if dataclasses.is_dataclass(cls):
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        frozen = "frozen" if params.frozen else "mutable"
        slots = "slots" if "__slots__" in cls.__dict__ else "dict"
        return f"dataclass ({frozen}, {slots})"
    if "__slots__" in cls.__dict__:
        return "hand-slotted (ipse._plain.Plain)" if issubclass(cls, Plain) else "hand-slotted"
    return "other class"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", dest="verbose", action="store_true")
    args = parser.parse_args()
    found: dict[str, set[str]] = defaultdict(set)
    seen: set[type] = set()
    for name in PACKAGES:
        module = importlib.import_module(name)
        print(f"{name:20} {len(module.__all__):3} names")
        for member in module.__all__:
            value = getattr(module, member)
            if not isinstance(value, type) or value in seen:
                continue
            seen.add(value)
            what = kind(value)
            if what is not None:
                found[what].add(f"{name}.{member}")
    for what, names in sorted(found.items()):
        print(f"{len(names):4}  {what}")
        if args.verbose or not what.startswith("dataclass ("):
            for qualified in sorted(names):
                print(f"        {qualified}")


if __name__ == "__main__":
    main()
