"""Snapshot schema versions 1, 2 and 3: strict validation, explicit migrations, export.

A stored snapshot is a JSON object whose ``schema`` key names its version. `load_snapshot`
validates the document against exactly that version (unknown, missing or wrongly typed fields
are refused with a message naming the field), then applies the explicit steps 1 → 2 → 3, then
builds the current `TwinState`. Nothing is guessed and nothing stored is rewritten: the next
write stores version 3. `dump_state` writes version 3; `export_state` also writes version 2
for consumers of that shape (lossy: live facts become plain strings, the active loop becomes
``open_loop``).

Version 1: ``{twin_id, account, facts: [str], commitments: [str], open_loop, as_of, schema}``.
Version 2: ``{twin_id, counterparty: {account, established_facts: [str]}, commitments,
open_loop, as_of, schema}``.
Version 3: facts carry ``id, text, established_at, last_used_at, pinned, expires_at,
superseded_by``; ``open_loops: [{id, text, opened_at}]`` with ``active_loop`` naming one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ipse.errors import InputError
from ipse.twin._state import (
    CURRENT_SCHEMA,
    Counterparty,
    Fact,
    Loop,
    TwinState,
    format_time,
    text_id,
)

JSONDict = dict[str, Any]
SUPPORTED_SCHEMAS = (1, 2, 3)

# Every version's fields, declared once: the validators, the fast paths and the writers use these.
V1_FIELDS = frozenset(
    {"twin_id", "account", "facts", "commitments", "open_loop", "as_of", "schema"}
)
V2_FIELDS = frozenset({"twin_id", "counterparty", "commitments", "open_loop", "as_of", "schema"})
V2_COUNTERPARTY_FIELDS = frozenset({"account", "established_facts"})
V3_FIELDS = frozenset(
    {"twin_id", "counterparty", "commitments", "open_loops", "active_loop", "as_of", "schema"}
)
V3_COUNTERPARTY_FIELDS = frozenset({"account", "facts"})
FACT_FIELDS = frozenset(
    {"id", "text", "established_at", "last_used_at", "pinned", "expires_at", "superseded_by"}
)
LOOP_FIELDS = frozenset({"id", "text", "opened_at"})


def _fail(path: str, problem: str) -> InputError:
    return InputError(f"{path}: {problem}")


def _obj(
    value: Any, path: str, required: AbstractSet[str], optional: AbstractSet[str] = frozenset()
) -> JSONDict:
    if not isinstance(value, dict):
        raise _fail(path or "snapshot", f"expected an object, got {type(value).__name__}")
    for key in sorted(required):
        if key not in value:
            raise _fail(_join(path, key), "missing")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise _fail(_join(path, unknown[0]), "unknown field")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _str(value: Any, path: str, *, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        kind = "a string or null" if nullable else "a string"
        raise _fail(path, f"expected {kind}, got {_kind(value)}")
    return value


def _text(value: Any, path: str) -> str:
    text = _str(value, path)
    assert text is not None
    return text


def _strs(value: Any, path: str) -> list[str]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of strings, got {_kind(value)}")
    return [_text(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"expected true or false, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def parse_time(value: Any, path: str) -> datetime:
    """An ISO-8601 timestamp; one without an offset is taken as UTC."""
    text = _text(value, path)
    try:
        return _parse_iso(text)
    except ValueError as exc:
        raise _fail(path, f"not an ISO-8601 timestamp: {text!r}") from exc


@lru_cache(maxsize=4096)
def _parse_iso(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _time_or_none(value: Any, path: str) -> datetime | None:
    return None if value is None else parse_time(value, path)


def schema_of(doc: Any) -> int:
    """The declared schema version of a snapshot document; `InputError` if absent or unknown."""
    if not isinstance(doc, dict):
        raise _fail("snapshot", f"expected an object, got {_kind(doc)}")
    if "schema" not in doc:
        raise _fail("schema", "missing")
    version = doc["schema"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail("schema", f"expected an integer, got {_kind(version)}")
    if version not in SUPPORTED_SCHEMAS:
        supported = ", ".join(map(str, SUPPORTED_SCHEMAS))
        raise _fail("schema", f"unknown schema version {version} (supported: {supported})")
    return version


def validate_v1(doc: Any) -> JSONDict:
    """Check a version 1 document field by field."""
    d = _obj(doc, "", V1_FIELDS)
    _text(d["twin_id"], "twin_id")
    _text(d["account"], "account")
    _strs(d["facts"], "facts")
    _strs(d["commitments"], "commitments")
    _str(d["open_loop"], "open_loop", nullable=True)
    parse_time(d["as_of"], "as_of")
    return d


def validate_v2(doc: Any) -> JSONDict:
    """Check a version 2 document field by field."""
    d = _obj(doc, "", V2_FIELDS)
    _text(d["twin_id"], "twin_id")
    cp = _obj(d["counterparty"], "counterparty", V2_COUNTERPARTY_FIELDS)
    _text(cp["account"], "counterparty.account")
    _strs(cp["established_facts"], "counterparty.established_facts")
    _strs(d["commitments"], "commitments")
    _str(d["open_loop"], "open_loop", nullable=True)
    parse_time(d["as_of"], "as_of")
    return d


def migrate_1_to_2(doc: JSONDict) -> JSONDict:
    """Version 1 → 2: account and facts move under ``counterparty``."""
    return {
        "twin_id": doc["twin_id"],
        "counterparty": {"account": doc["account"], "established_facts": list(doc["facts"])},
        "commitments": list(doc["commitments"]),
        "open_loop": doc["open_loop"],
        "as_of": doc["as_of"],
        "schema": 2,
    }


def migrate_2_to_3(doc: JSONDict) -> JSONDict:
    """Version 2 → 3: facts get ids and timestamps (``as_of``), the one loop becomes active."""
    as_of = format_time(parse_time(doc["as_of"], "as_of"))
    facts: list[JSONDict] = []
    seen: set[str] = set()
    for text in doc["counterparty"]["established_facts"]:
        fact_id = text_id("f-", text)
        if fact_id in seen:
            continue
        seen.add(fact_id)
        facts.append(
            {
                "id": fact_id,
                "text": text,
                "established_at": as_of,
                "last_used_at": as_of,
                "pinned": False,
                "expires_at": None,
                "superseded_by": None,
            }
        )
    loop = doc["open_loop"]
    loops = [] if loop is None else [{"id": text_id("l-", loop), "text": loop, "opened_at": as_of}]
    return {
        "twin_id": doc["twin_id"],
        "counterparty": {"account": doc["counterparty"]["account"], "facts": facts},
        "commitments": list(doc["commitments"]),
        "open_loops": loops,
        "active_loop": loops[0]["id"] if loops else None,
        "as_of": as_of,
        "schema": 3,
    }


_VALIDATORS: dict[int, Callable[[Any], JSONDict]] = {1: validate_v1, 2: validate_v2}
_STEPS: dict[int, Callable[[JSONDict], JSONDict]] = {1: migrate_1_to_2, 2: migrate_2_to_3}


def _parse_v3(doc: Any) -> TwinState:
    d = _obj(doc, "", V3_FIELDS - {"schema"}, frozenset({"schema"}))
    cp = _obj(d["counterparty"], "counterparty", V3_COUNTERPARTY_FIELDS)
    if not isinstance(cp["facts"], list):
        raise _fail("counterparty.facts", f"expected a list, got {_kind(cp['facts'])}")
    facts = tuple(
        _fact_fast(f) or _parse_fact(f, f"counterparty.facts[{i}]")
        for i, f in enumerate(cp["facts"])
    )
    _no_duplicates([f.id for f in facts], "counterparty.facts", "fact")
    if not isinstance(d["open_loops"], list):
        raise _fail("open_loops", f"expected a list, got {_kind(d['open_loops'])}")
    loops = tuple(
        _loop_fast(lp) or _parse_loop(lp, f"open_loops[{i}]")
        for i, lp in enumerate(d["open_loops"])
    )
    loop_ids = [lp.id for lp in loops]
    _no_duplicates(loop_ids, "open_loops", "loop")
    active = _str(d["active_loop"], "active_loop", nullable=True)
    if active is not None and active not in loop_ids:
        raise _fail("active_loop", f"unknown loop {active!r}")
    return TwinState(
        twin_id=_text(d["twin_id"], "twin_id"),
        counterparty=Counterparty(_text(cp["account"], "counterparty.account"), facts),
        commitments=tuple(_strs(d["commitments"], "commitments")),
        open_loops=loops,
        active_loop=active,
        as_of=parse_time(d["as_of"], "as_of"),
    )


def _no_duplicates(ids: list[str], path: str, what: str) -> None:
    seen: set[str] = set()
    for i, item in enumerate(ids):
        if item in seen:
            raise _fail(f"{path}[{i}].id", f"duplicate {what} id {item!r}")
        seen.add(item)


def _fact_fast(value: Any) -> Fact | None:
    """A well-formed fact without building error paths; None sends it to the checking parser,
    which names the field that is wrong."""
    if type(value) is not dict or value.keys() != FACT_FIELDS:
        return None
    expires, superseded = value["expires_at"], value["superseded_by"]
    if not (
        type(value["id"]) is str
        and type(value["text"]) is str
        and type(value["pinned"]) is bool
        and type(value["established_at"]) is str
        and type(value["last_used_at"]) is str
        and (expires is None or type(expires) is str)
        and (superseded is None or type(superseded) is str)
    ):
        return None
    try:
        return Fact(
            id=value["id"],
            text=value["text"],
            established_at=_parse_iso(value["established_at"]),
            last_used_at=_parse_iso(value["last_used_at"]),
            pinned=value["pinned"],
            expires_at=None if expires is None else _parse_iso(expires),
            superseded_by=superseded,
        )
    except ValueError:
        return None


def _loop_fast(value: Any) -> Loop | None:
    """A well-formed loop without building error paths (see `_fact_fast`)."""
    if type(value) is not dict or value.keys() != LOOP_FIELDS:
        return None
    if not (type(value["id"]) is str and type(value["text"]) is str):
        return None
    opened = value["opened_at"]
    if type(opened) is not str:
        return None
    try:
        return Loop(id=value["id"], text=value["text"], opened_at=_parse_iso(opened))
    except ValueError:
        return None


def _parse_fact(value: Any, path: str) -> Fact:
    f = _obj(value, path, FACT_FIELDS)
    return Fact(
        id=_text(f["id"], f"{path}.id"),
        text=_text(f["text"], f"{path}.text"),
        established_at=parse_time(f["established_at"], f"{path}.established_at"),
        last_used_at=parse_time(f["last_used_at"], f"{path}.last_used_at"),
        pinned=_bool(f["pinned"], f"{path}.pinned"),
        expires_at=_time_or_none(f["expires_at"], f"{path}.expires_at"),
        superseded_by=_str(f["superseded_by"], f"{path}.superseded_by", nullable=True),
    )


def _parse_loop(value: Any, path: str) -> Loop:
    lp = _obj(value, path, LOOP_FIELDS)
    return Loop(
        id=_text(lp["id"], f"{path}.id"),
        text=_text(lp["text"], f"{path}.text"),
        opened_at=parse_time(lp["opened_at"], f"{path}.opened_at"),
    )


def load_snapshot(doc: Mapping[str, Any]) -> TwinState:
    """Any supported version of a snapshot document → the current `TwinState`.

    Validates the declared version strictly, then migrates step by step; never guesses a
    version and never changes ``doc``.
    """
    version = schema_of(doc)
    current: Any = doc
    while version < CURRENT_SCHEMA:
        current = _STEPS[version](_VALIDATORS[version](current))
        version += 1
    return _parse_v3(current)


def dump_state(state: TwinState) -> JSONDict:
    """The current state as a version 3 document (what the store writes)."""
    return {
        "twin_id": state.twin_id,
        "counterparty": {
            "account": state.counterparty.account,
            "facts": [
                {
                    "id": f.id,
                    "text": f.text,
                    "established_at": format_time(f.established_at),
                    "last_used_at": format_time(f.last_used_at),
                    "pinned": f.pinned,
                    "expires_at": None if f.expires_at is None else format_time(f.expires_at),
                    "superseded_by": f.superseded_by,
                }
                for f in state.facts
            ],
        },
        "commitments": list(state.commitments),
        "open_loops": [
            {"id": lp.id, "text": lp.text, "opened_at": format_time(lp.opened_at)}
            for lp in state.open_loops
        ],
        "active_loop": state.active_loop,
        "as_of": format_time(state.as_of),
        "schema": CURRENT_SCHEMA,
    }


def export_v2(state: TwinState) -> JSONDict:
    """The state in version 2's shape: live facts as strings, the active loop as ``open_loop``."""
    active = state.loop(state.active_loop) if state.active_loop else None
    return {
        "twin_id": state.twin_id,
        "counterparty": {
            "account": state.counterparty.account,
            "established_facts": [f.text for f in state.live_facts()],
        },
        "commitments": list(state.commitments),
        "open_loop": active.text if active else None,
        "as_of": format_time(state.as_of),
        "schema": 2,
    }


def export_state(state: TwinState, schema: int = CURRENT_SCHEMA) -> JSONDict:
    """The state as a document of schema 2 or 3."""
    if schema == CURRENT_SCHEMA:
        return dump_state(state)
    if schema == 2:
        return export_v2(state)
    raise InputError(f"schema: cannot export to version {schema} (supported: 2, 3)")
