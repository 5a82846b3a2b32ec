"""Why a request reused less of the cache than it could: the first divergence, classified.

Given a request and the best earlier candidate (the one sharing the longest prefix, found by
hash, or a same-conversation fallback), `classify` names the cause and where it is:
``model_changed``, ``tools_changed`` (added, removed, reordered, edited: which tool, which JSON
path), ``system_changed`` (with a hint when the change looks volatile), ``settings_changed``,
``message_edited``, ``history_truncated``, ``key_order_changed``; or, when the content matched
and the cache mechanics did not serve it, the simulator's reason (``ttl_expired``,
``below_minimum``, ``no_breakpoint``, ``concurrent``). ``not_served`` is the record's word: a
loss the recorded usage shows and the model does not predict (`ipse.prefix._report`);
``cli_version_changed`` the record's too (the harness's version changed between two calls),
and the API's own diagnosis, when a response carries one, names the cause outright
(``messages_changed``, ``previous_message_not_found``, ``unavailable`` and the changes
above). Only the one diverging block is looked at closely, so the cost stays independent of
history length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipse import jsonio
from ipse.prefix._blocks import block_text
from ipse.prefix._flat import Flat, Locator
from ipse.prefix._growing import SharedHistory
from ipse.prefix._simulate import Miss

CAUSES = (
    "model_changed",
    "tools_changed",
    "system_changed",
    "settings_changed",
    "message_edited",
    "history_truncated",
    "key_order_changed",
    "ttl_expired",
    "below_minimum",
    "no_breakpoint",
    "concurrent",
    "not_served",
    "cli_version_changed",
    "messages_changed",
    "previous_message_not_found",
    "unavailable",
    "compaction",
    "handoff",
)

# The API's cache-miss diagnosis (``diagnostics.cache_miss_reason.type``) -> the cause named.
API_CAUSES = {
    "model_changed": "model_changed",
    "system_changed": "system_changed",
    "tools_changed": "tools_changed",
    "messages_changed": "messages_changed",
    "previous_message_not_found": "previous_message_not_found",
    "unavailable": "unavailable",
}


@dataclass(frozen=True, slots=True)
class Cause:
    """A named reason, where it happened, and a one-line explanation."""

    kind: str
    location: str
    detail: str
    candidate: int | None = None  # index of the earlier request compared against
    value: str | None = None  # the changed text, shown only on request (it may be a secret)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "location": self.location,
            "detail": self.detail,
            "candidate": self.candidate,
        }


@dataclass(frozen=True, slots=True)
class Side:
    """One request as `classify` needs it."""

    index: int
    body: Mapping[str, Any]
    flat: Flat
    provider: str


def locate(where: Locator, body: Mapping[str, Any], provider: str) -> str:
    """A readable path for a position: ``tools[3] (Bash)``, ``messages[4].content[1]``."""
    layer, i, j = where
    if layer == "tools":
        tools = body.get("tools") or []
        name = _tool_name(tools[i]) if i < len(tools) else "?"
        return f"tools[{i}] ({name})"
    if layer == "system":
        if provider == "anthropic":
            return "system" if isinstance(body.get("system"), str) else f"system[{i}]"
        return f"messages[{i}] (system)"
    if layer == "settings":
        return "settings"
    if provider != "anthropic":
        return f"messages[{i}]"
    try:
        message = _message(body, i)
    except (KeyError, IndexError, TypeError):
        message = {}
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return f"messages[{i}]"
    return f"messages[{i}].content[{j}]"


def raw_at(where: Locator, body: Mapping[str, Any], provider: str) -> Any:
    """The raw block at a position (a tool dict, a system block, a message block)."""
    layer, i, j = where
    try:
        if layer == "tools":
            return body["tools"][i]
        if layer == "system":
            if provider == "anthropic":
                system = body["system"]
                return system if isinstance(system, str) else system[i]
            return _message(body, i)
        if layer in ("history", "input"):
            message = _message(body, i)
            if provider != "anthropic":
                return message
            content = message.get("content")
            return content if isinstance(content, str) or j < 0 else content[j]
    except (KeyError, IndexError, TypeError):
        return None
    return None


def _message(body: Mapping[str, Any], i: int) -> Any:
    """``body["messages"][i]``; a shared history answers without building its list."""
    if isinstance(body, SharedHistory) and body.key == "messages":
        return body.message(i)
    return body["messages"][i]


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, Mapping):
        return "?"
    if isinstance(tool.get("function"), Mapping):
        return str(tool["function"].get("name", "?"))
    return str(tool.get("name", "?"))


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping) and "cache_control" in value:
        return {k: v for k, v in value.items() if k != "cache_control"}
    return value


def json_path(old: Any, new: Any, path: str = "$") -> str | None:
    """The JSON path of the first difference between two values (None when equal)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in list(old) + [k for k in new if k not in old]:
            if key not in new or key not in old:
                return f"{path}.{key}"
            found = json_path(old[key], new[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for n, (a, b) in enumerate(zip(old, new, strict=False)):
            found = json_path(a, b, f"{path}[{n}]")
            if found is not None:
                return found
        return None if len(old) == len(new) else f"{path}[{min(len(old), len(new))}]"
    return None if old == new else path


def _canonical(value: Any) -> bytes:
    return jsonio.dumps(_strip(value), option=jsonio.OPT_SORT_KEYS)


def divergence(new: Flat, old: Flat) -> int:
    """The first position where two requests differ (by chained hash; linear, rarely used)."""
    n = min(len(new.chain), len(old.chain))
    lo, hi = 0, n  # the chain is prefix-closed: bisect for the first mismatch
    while lo < hi:
        mid = (lo + hi) // 2
        if new.chain[mid] == old.chain[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def classify(new: Side, old: Side, position: int, miss: Miss | None) -> Cause:
    """The cause of lost reuse for ``new`` against the earlier ``old``, diverging at
    ``position`` (equal to ``old``'s length when ``old`` is a prefix of ``new``)."""
    model_new, model_old = new.flat.model, old.flat.model
    if model_new != model_old:
        return Cause(
            "model_changed", "model", f"{model_old} -> {model_new}: a separate cache", old.index
        )
    flat_new, flat_old = new.flat, old.flat
    if position < len(flat_old.chain) and position < len(flat_new.chain):
        return _content_cause(new, old, position)
    if position < len(flat_old.chain):  # the new request stops inside the old one
        return Cause(
            "history_truncated",
            locate(flat_old.where[position], old.body, old.provider),
            f"the request ends where request #{old.index} went on: turns were dropped",
            old.index,
        )
    if miss is not None:
        location = (
            locate(flat_new.where[miss.position], new.body, new.provider)
            if miss.position < len(flat_new.where)
            else "end"
        )
        return Cause(miss.kind, location, miss.detail, old.index)
    return Cause(
        "no_breakpoint",
        "end",
        f"the prefix shared with request #{old.index} was not written to the cache",
        old.index,
    )


def _content_cause(new: Side, old: Side, position: int) -> Cause:
    where_new = new.flat.where[position]
    where_old = old.flat.where[position]
    layer = where_new[0] if where_new[0] == where_old[0] else _earlier(where_new, where_old)
    if layer == "settings" or "settings" in (where_new[0], where_old[0]):
        return _settings_cause(new, old)
    raw_new = raw_at(where_new, new.body, new.provider)
    raw_old = raw_at(where_old, old.body, old.provider)
    location = locate(where_new, new.body, new.provider)
    if (
        where_new[0] == where_old[0]
        and raw_new is not None
        and raw_old is not None
        and _strip(raw_new) != _strip(raw_old)
        and _canonical(raw_new) == _canonical(raw_old)
    ) or (
        raw_new is not None
        and raw_old is not None
        and _strip(raw_new) == _strip(raw_old)
        and jsonio.dumps(_strip(raw_new)) != jsonio.dumps(_strip(raw_old))
    ):
        return Cause(
            "key_order_changed",
            location,
            "same JSON, keys in another order: other bytes",
            old.index,
        )
    if layer == "tools":
        return _tools_cause(new, old, where_new)
    if layer == "system":
        from ipse._redact import fingerprint
        from ipse.prefix._volatile import changed_span, hint  # (a rare cause: on use)

        text_old, text_new = block_text(_strip(raw_old)), block_text(_strip(raw_new))
        start, _, span = changed_span(text_old, text_new)
        why = hint(text_old, text_new)
        detail = f"system prompt changed at character {start}: now {fingerprint(span)}"
        if why:
            detail += f"; {why}: keep volatile values out of the system prompt"
        return Cause("system_changed", location, detail, old.index, value=span[:200])
    return _history_cause(new, old, position, location)


def _earlier(a: Locator, b: Locator) -> str:
    order = ("settings", "tools", "system", "history", "input")
    return a[0] if order.index(a[0]) <= order.index(b[0]) else b[0]


def _settings_cause(new: Side, old: Side) -> Cause:
    a, b = old.flat.settings, new.flat.settings
    changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    parts = []
    for name in changed:
        before = a.get(name, b"(absent)").decode()
        after = b.get(name, b"(absent)").decode()
        parts.append(f"{name}: {before[:40]} -> {after[:40]}")
    location = "settings." + (changed[0] if changed else "?")
    return Cause("settings_changed", location, "; ".join(parts) or "settings differ", old.index)


def _tools_cause(new: Side, old: Side, where: Locator) -> Cause:
    tools_new: Sequence[Any] = new.body.get("tools") or []
    tools_old: Sequence[Any] = old.body.get("tools") or []
    names_new = [_tool_name(t) for t in tools_new]
    names_old = [_tool_name(t) for t in tools_old]
    added = [n for n in names_new if n not in names_old]
    removed = [n for n in names_old if n not in names_new]
    location = locate(where, new.body, new.provider)
    if added or removed:
        parts = []
        if added:
            parts.append("added " + ", ".join(added))
        if removed:
            parts.append("removed " + ", ".join(removed))
        return Cause("tools_changed", location, "; ".join(parts), old.index)
    i = where[1]
    name = names_new[i] if i < len(names_new) else "?"
    if names_new != names_old:
        return Cause(
            "tools_changed",
            location,
            f"tools reordered: {name} moved (was at {names_old.index(name)})",
            old.index,
        )
    path = json_path(_strip(tools_old[i]), _strip(tools_new[i])) if i < len(tools_old) else None
    return Cause("tools_changed", location, f"definition of {name} edited at {path}", old.index)


def _history_cause(new: Side, old: Side, position: int, location: str) -> Cause:
    flat_new, flat_old = new.flat, old.flat
    h = flat_new.hashes[position]
    later = h in flat_old.hashes[position + 1 :]
    message = flat_new.where[position][1]
    if later or flat_new.messages < flat_old.messages:
        what = "compacted or trimmed" if not later else "turns dropped before it"
        return Cause(
            "history_truncated",
            location,
            f"history {what}: message {message} differs from request #{old.index}",
            old.index,
        )
    return Cause(
        "message_edited",
        location,
        f"message {message} was edited after request #{old.index} sent it: "
        "append a correction instead",
        old.index,
    )
