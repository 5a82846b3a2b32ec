"""A twin's TOML configuration: its role, its identity policy and its decay policy.

The role lives here and only here: rehydration takes it from the configuration, never from a
snapshot, so a stored state can never rewrite who the twin is. Example::

    id = "acme-support"
    role = "You are Ada, the support twin of Acme. Be brief and warm."

    [identity]
    fields = ["counterparty", "facts", "commitments", "open_loops", "active_loop"]

    [decay]
    max_facts = 40
    half_life_days = 14
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.fileio import read_bytes
from ipse.twin._decay import DEFAULT_HALF_LIFE, DecayPolicy
from ipse.twin._identity import IDENTITY_FIELDS, IdentityPolicy


@dataclass(frozen=True)
class TwinConfig:
    """Role text plus the per-twin policies."""

    role: str
    identity: IdentityPolicy = field(default_factory=IdentityPolicy)
    decay: DecayPolicy = field(default_factory=DecayPolicy)
    twin_id: str | None = None


def _table(doc: dict[str, Any], key: str, allowed: set[str]) -> dict[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{key}: expected a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise InputError(f"{key}.{unknown[0]}: unknown setting")
    return value


def parse_config(doc: dict[str, Any]) -> TwinConfig:
    """Build a `TwinConfig` from parsed TOML; `InputError` names the offending key."""
    unknown = sorted(set(doc) - {"id", "role", "identity", "decay"})
    if unknown:
        raise InputError(f"{unknown[0]}: unknown setting")
    role = doc.get("role")
    if not isinstance(role, str) or not role.strip():
        raise InputError("role: missing or empty (the twin's stable system text)")
    twin_id = doc.get("id")
    if twin_id is not None and not isinstance(twin_id, str):
        raise InputError("id: expected a string")
    ident = _table(doc, "identity", {"fields"})
    fields = ident.get("fields", list(IDENTITY_FIELDS))
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise InputError("identity.fields: expected a list of field names")
    dec = _table(doc, "decay", {"max_facts", "half_life_days", "half_life_seconds"})
    if "half_life_days" in dec and "half_life_seconds" in dec:
        raise InputError("decay.half_life_days: give either half_life_days or half_life_seconds")
    half_life: Any = DEFAULT_HALF_LIFE
    if "half_life_seconds" in dec:
        half_life = dec["half_life_seconds"]
    elif "half_life_days" in dec:
        days = dec["half_life_days"]
        if isinstance(days, bool) or not isinstance(days, int | float):
            raise InputError(f"decay.half_life_days: expected a number, got {days!r}")
        half_life = float(days) * 86400.0
    return TwinConfig(
        role=role,
        identity=IdentityPolicy(tuple(fields)),
        decay=DecayPolicy(max_facts=dec.get("max_facts"), half_life=half_life),
        twin_id=twin_id,
    )


def load_config(path: str | Path) -> TwinConfig:
    """Read and validate a twin's TOML configuration file."""
    data = read_bytes(path)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", path=path) from exc
    try:
        return parse_config(doc)
    except InputError as exc:
        raise InputError(exc.message, path=path) from exc
