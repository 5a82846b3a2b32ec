"""State transitions: pure functions from a state to the next state.

Establish a fact, supersede a fact, make a commitment, open a loop, close a loop, set the
active loop; plus setting the counterparty and marking a fact used (which moves no identity
field, only its relevance clock). Each takes the time ``at`` explicitly (default: now) and
returns a new state whose ``as_of`` is ``at``. Facts and loops are named by id or by their exact
text; an unknown one raises `InputError` naming the field, and the input state is untouched.
`apply_op` applies one transition given as data (``{"op": "establish_fact", "text": ...}``),
the form used by JSONL files and by the tool dispatcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from ipse.errors import InputError
from ipse.twin._state import Fact, Loop, TwinState, text_id, utcnow


def _when(at: datetime | None) -> datetime:
    return at if at is not None else utcnow()


def find_fact(state: TwinState, ref: str, field: str = "fact") -> Fact:
    """The fact with id ``ref``, else the live one whose text is exactly ``ref``."""
    for fact in state.facts:
        if fact.id == ref:
            return fact
    for fact in state.facts:
        if fact.text == ref and fact.active:
            return fact
    raise InputError(f"{field}: unknown fact {ref!r}")


def find_loop(state: TwinState, ref: str, field: str = "loop") -> Loop:
    """The open loop with id ``ref``, else the one whose text is exactly ``ref``."""
    for loop in state.open_loops:
        if ref in (loop.id, loop.text):
            return loop
    raise InputError(f"{field}: unknown loop {ref!r}")


def _nonempty(text: Any, field: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{field}: expected a non-empty string, got {text!r}")
    return text.strip()


def set_counterparty(state: TwinState, account: str, *, at: datetime | None = None) -> TwinState:
    """Name who the twin is talking to."""
    account = _nonempty(account, "account")
    return replace(
        state, counterparty=replace(state.counterparty, account=account), as_of=_when(at)
    )


def establish_fact(
    state: TwinState,
    text: str,
    *,
    pinned: bool = False,
    expires_at: datetime | None = None,
    at: datetime | None = None,
) -> TwinState:
    """Record a fact; establishing a known fact again refreshes it (and revives a replaced one)."""
    text = _nonempty(text, "text")
    now = _when(at)
    fact_id = text_id("f-", text)
    facts = list(state.facts)
    for i, fact in enumerate(facts):
        if fact.id == fact_id:
            facts[i] = replace(
                fact,
                last_used_at=now,
                pinned=fact.pinned or pinned,
                expires_at=expires_at,
                superseded_by=None,
                established_at=fact.established_at if fact.is_live(now) else now,
            )
            break
    else:
        facts.append(Fact(fact_id, text, now, now, pinned, expires_at, None))
    return replace(state.with_facts(tuple(facts)), as_of=now)


def supersede_fact(
    state: TwinState, fact: str, text: str, *, at: datetime | None = None
) -> TwinState:
    """Replace a live fact by a newer one; the old one stays, marked ``superseded_by``."""
    old = find_fact(state, fact)
    if not old.active:
        raise InputError(f"fact: {fact!r} was already superseded by {old.superseded_by!r}")
    text = _nonempty(text, "text")
    new_id = text_id("f-", text)
    if new_id == old.id:
        raise InputError("text: the new fact is the same as the one it supersedes")
    now = _when(at)
    updated = establish_fact(state, text, pinned=old.pinned, at=now)
    facts = tuple(replace(f, superseded_by=new_id) if f.id == old.id else f for f in updated.facts)
    return updated.with_facts(facts)


def use_fact(state: TwinState, fact: str, *, at: datetime | None = None) -> TwinState:
    """Mark a fact as used now (its relevance clock restarts); identity does not change."""
    found = find_fact(state, fact)
    now = _when(at)
    facts = tuple(replace(f, last_used_at=now) if f.id == found.id else f for f in state.facts)
    return replace(state.with_facts(facts), as_of=now)


def make_commitment(state: TwinState, text: str, *, at: datetime | None = None) -> TwinState:
    """Add a commitment (a promise, a tone, a posture); a repeated one is not added twice."""
    text = _nonempty(text, "text")
    commitments = state.commitments if text in state.commitments else (*state.commitments, text)
    return replace(state, commitments=commitments, as_of=_when(at))


def open_loop(
    state: TwinState, text: str, *, active: bool = True, at: datetime | None = None
) -> TwinState:
    """Open a loop (an already open one is kept); by default it becomes the active one."""
    text = _nonempty(text, "text")
    now = _when(at)
    loop_id = text_id("l-", text)
    loops = state.open_loops
    if state.loop(loop_id) is None:
        loops = (*loops, Loop(loop_id, text, now))
    active_loop = loop_id if active or state.active_loop is None else state.active_loop
    return replace(state, open_loops=loops, active_loop=active_loop, as_of=now)


def close_loop(state: TwinState, loop: str, *, at: datetime | None = None) -> TwinState:
    """Close an open loop; if it was active, the most recently opened remaining one is."""
    found = find_loop(state, loop)
    loops = tuple(lp for lp in state.open_loops if lp.id != found.id)
    active = state.active_loop
    if active == found.id:
        active = loops[-1].id if loops else None
    return replace(state, open_loops=loops, active_loop=active, as_of=_when(at))


def set_active_loop(state: TwinState, loop: str, *, at: datetime | None = None) -> TwinState:
    """Make an open loop the one the twin acts on first."""
    found = find_loop(state, loop)
    return replace(state, active_loop=found.id, as_of=_when(at))


def _arg(args: Mapping[str, Any], name: str, op: str) -> Any:
    if name not in args:
        raise InputError(f"{name}: missing (needed by {op})")
    return args[name]


def _opt_time(args: Mapping[str, Any], name: str) -> datetime | None:
    from ipse.twin._schema import parse_time

    value = args.get(name)
    return None if value is None else parse_time(value, name)


def _opt_bool(args: Mapping[str, Any], name: str, default: bool) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise InputError(f"{name}: expected true or false, got {value!r}")
    return value


OPS = (
    "close_loop",
    "establish_fact",
    "make_commitment",
    "open_loop",
    "set_active_loop",
    "set_counterparty",
    "supersede_fact",
    "use_fact",
)

_ALLOWED: dict[str, set[str]] = {
    "establish_fact": {"text", "pinned", "expires_at"},
    "supersede_fact": {"fact", "text"},
    "make_commitment": {"text"},
    "open_loop": {"text", "active"},
    "close_loop": {"loop"},
    "set_active_loop": {"loop"},
    "set_counterparty": {"account"},
    "use_fact": {"fact"},
}


def apply_op(
    state: TwinState, op: str, args: Mapping[str, Any], *, at: datetime | None = None
) -> TwinState:
    """Apply one transition named ``op`` with arguments ``args``; `InputError` if malformed."""
    if not isinstance(op, str) or op not in _ALLOWED:
        raise InputError(f"op: unknown transition {op!r} (known: {', '.join(OPS)})")
    unknown = sorted(set(args) - _ALLOWED[op])
    if unknown:
        raise InputError(f"{unknown[0]}: unknown argument of {op}")
    for name in ("text", "fact", "loop", "account"):
        if name in args and not isinstance(args[name], str):
            raise InputError(f"{name}: expected a string, got {args[name]!r}")
        if name in args:  # a twin's text is hashed and stored as UTF-8
            try:
                args[name].encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(f"{name}: not valid UTF-8 (character {exc.start + 1})") from None
    if op == "establish_fact":
        return establish_fact(
            state,
            _arg(args, "text", op),
            pinned=_opt_bool(args, "pinned", False),
            expires_at=_opt_time(args, "expires_at"),
            at=at,
        )
    if op == "supersede_fact":
        return supersede_fact(state, _arg(args, "fact", op), _arg(args, "text", op), at=at)
    if op == "make_commitment":
        return make_commitment(state, _arg(args, "text", op), at=at)
    if op == "open_loop":
        return open_loop(
            state, _arg(args, "text", op), active=_opt_bool(args, "active", True), at=at
        )
    if op == "close_loop":
        return close_loop(state, _arg(args, "loop", op), at=at)
    if op == "set_active_loop":
        return set_active_loop(state, _arg(args, "loop", op), at=at)
    if op == "set_counterparty":
        return set_counterparty(state, _arg(args, "account", op), at=at)
    return use_fact(state, _arg(args, "fact", op), at=at)


def apply_record(
    state: TwinState, record: Any, *, at: datetime | None = None, where: str = ""
) -> TwinState:
    """Apply one transition record ``{"op": NAME, ...arguments}``."""
    prefix = f"{where}: " if where else ""
    if not isinstance(record, dict):
        raise InputError(f"{prefix}transition: expected an object, got {type(record).__name__}")
    if "op" not in record:
        raise InputError(f"{prefix}op: missing")
    args = {k: v for k, v in record.items() if k != "op"}
    try:
        return apply_op(state, record["op"], args, at=at)
    except InputError as exc:
        if not where:
            raise
        raise InputError(f"{where}: {exc.message}") from exc


__all__ = [
    "OPS",
    "apply_op",
    "apply_record",
    "close_loop",
    "establish_fact",
    "find_fact",
    "find_loop",
    "make_commitment",
    "open_loop",
    "set_active_loop",
    "set_counterparty",
    "supersede_fact",
    "use_fact",
]
