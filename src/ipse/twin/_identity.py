"""The identity hash: which parts of a state make it a different twin-in-conversation.

`state_hash` hashes a canonical JSON serialization (sorted keys, no whitespace, UTF-8) of the
identity-relevant fields only: the counterparty, the texts of live facts, commitments, open
loops and which one is active. Timestamps, usage times, pins and token counts never count, so
a turn of pleasantries (or touching a fact) hashes the same. Which fields count is a per-twin
`IdentityPolicy` from the twin's configuration.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.errors import InputError
from ipse.twin._state import TwinState

IDENTITY_FIELDS = ("counterparty", "facts", "commitments", "open_loops", "active_loop")


@dataclass(frozen=True)
class IdentityPolicy:
    """Which fields make up a twin's identity (a subset of `IDENTITY_FIELDS`)."""

    fields: tuple[str, ...] = IDENTITY_FIELDS

    def __post_init__(self) -> None:
        unknown = sorted(set(self.fields) - set(IDENTITY_FIELDS))
        if unknown:
            allowed = ", ".join(IDENTITY_FIELDS)
            raise InputError(f"identity.fields: unknown field {unknown[0]!r} (allowed: {allowed})")
        if not self.fields:
            raise InputError("identity.fields: must name at least one field")
        object.__setattr__(self, "fields", tuple(sorted(set(self.fields))))


DEFAULT_POLICY = IdentityPolicy()


def identity_view(state: TwinState, policy: IdentityPolicy = DEFAULT_POLICY) -> dict[str, Any]:
    """The identity-relevant fields of a state, as plain JSON values."""
    view: dict[str, Any] = {"twin_id": state.twin_id}
    chosen = set(policy.fields)
    if "counterparty" in chosen:
        view["counterparty"] = state.counterparty.account
    if "facts" in chosen:
        view["facts"] = sorted(f.text for f in state.live_facts())
    if "commitments" in chosen:
        view["commitments"] = sorted(state.commitments)
    if "open_loops" in chosen:
        view["open_loops"] = sorted(lp.text for lp in state.open_loops)
    if "active_loop" in chosen:
        active = state.loop(state.active_loop) if state.active_loop else None
        view["active_loop"] = active.text if active else None
    return view


def changed_fields(before: TwinState, after: TwinState) -> tuple[str, ...]:
    """The identity fields (of all of `IDENTITY_FIELDS`) whose values differ between two states."""
    return changed_in(identity_view(before), identity_view(after))


def changed_in(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    """`changed_fields` of two states' full identity views (`identity_view` of every field)."""
    return tuple(name for name in IDENTITY_FIELDS if old.get(name) != new.get(name))


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no whitespace, UTF-8."""
    return jsonio.dumps(value, option=jsonio.OPT_SORT_KEYS)


def state_hash(state: TwinState, policy: IdentityPolicy = DEFAULT_POLICY) -> str:
    """``sha256:`` + hex digest of the canonical identity view of ``state`` under ``policy``."""
    return view_hash(identity_view(state, policy))


def view_hash(view: dict[str, Any], policy: IdentityPolicy = DEFAULT_POLICY) -> str:
    """`state_hash` of the state whose full identity view (every field) is ``view``."""
    if len(policy.fields) != len(IDENTITY_FIELDS):
        chosen = set(policy.fields)
        view = {k: v for k, v in view.items() if k == "twin_id" or k in chosen}
    return "sha256:" + hashlib.sha256(canonical_json(view)).hexdigest()
