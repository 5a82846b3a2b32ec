"""Ordered schema migrations, recorded in the database, shared by every component.

Each component (the snapshot tables, the conversations, the archive of removed blocks) registers
its own ordered list of named steps with `register`, explicitly, before it opens a store; nothing
registers by being imported. Opening a store applies every pending step of every registered
component, in order, inside one transaction that holds the database's writer
lock (``BEGIN IMMEDIATE`` on SQLite, an advisory transaction lock on PostgreSQL), so processes
opening the same database at once apply each step exactly once. Applied steps are recorded in
``ipse_migrations (component, step, name, applied_at)``; a recorded name that differs from the
registered one means the database belongs to another version of ipse, and opening fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ipse.errors import StoreError


@dataclass(frozen=True)
class MigrationStep:
    """One migration step: its number within the component, a name, and SQL per backend."""

    number: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


_REGISTRY: dict[str, tuple[MigrationStep, ...]] = {}

MIGRATIONS_TABLE_SQLITE = (
    "CREATE TABLE IF NOT EXISTS ipse_migrations ("
    " component TEXT NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL,"
    " applied_at REAL NOT NULL, PRIMARY KEY (component, step))"
)
MIGRATIONS_TABLE_POSTGRES = (
    "CREATE TABLE IF NOT EXISTS ipse_migrations ("
    " component TEXT NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL,"
    " applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (component, step))"
)


def register(component: str, steps: Sequence[MigrationStep]) -> None:
    """Register a component's ordered steps (numbered 1, 2, ...); re-registering must match."""
    numbers = [s.number for s in steps]
    if numbers != list(range(1, len(steps) + 1)):
        raise ValueError(f"{component}: migration steps must be numbered 1..n, got {numbers}")
    existing = _REGISTRY.get(component)
    if existing is not None and existing != tuple(steps):
        raise ValueError(f"{component}: migration steps already registered differently")
    _REGISTRY[component] = tuple(steps)


def registered() -> dict[str, tuple[MigrationStep, ...]]:
    """Every registered component and its steps, in registration order."""
    return dict(_REGISTRY)


def plan(
    applied: dict[tuple[str, int], str], components: dict[str, tuple[MigrationStep, ...]]
) -> list[tuple[str, MigrationStep]]:
    """The steps still to apply, in order; `StoreError` if the recorded history disagrees."""
    todo: list[tuple[str, MigrationStep]] = []
    for component, steps in components.items():
        for step in steps:
            name = applied.get((component, step.number))
            if name is None:
                todo.append((component, step))
            elif name != step.name:
                raise StoreError(
                    f"migration {component}#{step.number} is recorded as {name!r} but this "
                    f"version of ipse calls it {step.name!r}; the database belongs to another "
                    "version"
                )
        known = {s.number for s in steps}
        newer = sorted(n for (c, n) in applied if c == component and n not in known)
        if newer:
            raise StoreError(
                f"the database has {component} migration step {newer[0]} that this version of "
                "ipse does not know; upgrade ipse"
            )
    return todo
