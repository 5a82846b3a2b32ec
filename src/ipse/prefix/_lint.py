"""Lints on one request, to freeze the front before it is sent.

Each finding names a code, where it is, and what to do:

* ``volatile_system`` / ``volatile_tool``: a timestamp, date, UUID or epoch in the system
  prompt or a tool definition: every change rewrites everything after it;
* ``tool_order``: tools listed twice, or (across a log) listed in another order than before;
* ``unstable_breakpoint``: a breakpoint with a volatile value before it (its entry is never hit
  again), or with fewer tokens before it than the model's minimum (never written);
* ``ttl_order``: a 1-hour breakpoint after a 5-minute one (longer TTLs must come first);
* ``too_many_breakpoints``: more than the provider's 4.

Lint judges only what it can see: a request rebuilt from a session file has no system prompt or
tools (a placeholder stands for them), so their size is not judged, and recorded usage that
shows a cache read or write overrules the size estimate. A body of the other provider's shape
(an Anthropic body linted with ``--provider openai``) has its front (system prompt, tools) put in
that provider's shape first, so its top-level ``system`` is linted, not silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ipse._redact import fingerprint
from ipse._tokens import TokenCounter
from ipse.prefix._actual import actual_tokens
from ipse.prefix._blocks import block_text
from ipse.prefix._causes import locate, raw_at
from ipse.prefix._flat import Flat
from ipse.prefix._hashing import Flattener
from ipse.prefix._layers import request_body
from ipse.prefix._requests import UNRECORDED_FRONT, body_provider
from ipse.prefix._rules import rules
from ipse.prefix._volatile import volatile_values
from ipse.transcript import Conversation
from ipse.transcript._shared import body_dialect, codec

_TOOL_KINDS = frozenset({"timestamp", "epoch"})


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in a request."""

    code: str
    location: str
    message: str
    value: str | None = None  # the volatile value, shown only on request (it may be a secret)

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "location": self.location, "message": self.message}


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            names.append(str(name))
    return names


def lint(
    request: Conversation | Mapping[str, Any],
    provider: str | None = None,
    *,
    previous: Mapping[str, Any] | None = None,
    counter: TokenCounter | None = None,
    usage: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """Every finding for one request (``previous``: the request before it, if any; ``usage``:
    what the provider recorded for it, if known)."""
    body = request_body(request)
    unseen_front = body.get("system") is UNRECORDED_FRONT
    name = provider or body_provider(body)
    body = _in_shape_of(body, name)
    if previous is not None:
        previous = _in_shape_of(previous, name)
    table = rules(name)
    flat = Flattener(table, counter).flatten(body)
    findings, first_volatile = _volatile_front(flat, body, name)
    findings.extend(_tool_order(body, previous))
    if table.provider == "anthropic":
        recorded = actual_tokens(usage)
        cached = recorded.cache_read + recorded.cache_write if recorded is not None else 0
        judge_size = not unseen_front and cached == 0
        findings.extend(_breakpoints(flat, body, name, first_volatile, judge_size))
    return findings


def _volatile_front(
    flat: Flat, body: Mapping[str, Any], name: str
) -> tuple[list[Finding], int | None]:
    """A finding for each block of the system prompt or the tools holding a volatile value,
    and the first such position (None: none)."""
    findings: list[Finding] = []
    first_volatile: int | None = None
    for p, where in enumerate(flat.where):
        if where[0] not in ("system", "tools"):
            continue
        text = block_text(raw_at(where, body, name))
        values = volatile_values(text)
        if where[0] == "tools":  # tool docs quote example dates and ids; flag clock values only
            values = [v for v in values if v[0] in _TOOL_KINDS]
        if not values:
            continue
        if first_volatile is None:
            first_volatile = p
        kind, value = values[0]
        findings.append(
            Finding(
                f"volatile_{'system' if where[0] == 'system' else 'tool'}",
                locate(where, body, name),
                f"a {kind} {fingerprint(value)} in the front of the request: each new "
                "value rewrites the cache from here on; move it to the newest message",
                value=value,
            )
        )
    return findings, first_volatile


def _tool_order(body: Mapping[str, Any], previous: Mapping[str, Any] | None) -> list[Finding]:
    """Tools listed twice, and the same tools in another order than the request before."""
    findings: list[Finding] = []
    names = _tool_names(body)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        findings.append(
            Finding("tool_order", "tools", f"tools listed more than once: {', '.join(duplicates)}")
        )
    if previous is not None:
        before = _tool_names(previous)
        if sorted(before) == sorted(names) and before != names:
            findings.append(
                Finding(
                    "tool_order",
                    "tools",
                    "the same tools in another order than the previous request: "
                    "sort them once and keep the order fixed",
                )
            )
    return findings


def _in_shape_of(body: Mapping[str, Any], provider: str) -> Mapping[str, Any]:
    """The front of the body as ``provider`` receives it: an Anthropic body's ``system`` as the
    first chat message and its tools as functions for OpenAI or vLLM; a chat body's leading
    system messages as ``system`` and its functions as tools for Anthropic. A body already in
    the provider's shape, or one with no messages, stays as it is."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body
    anthropic_body = codec(body_dialect(body)).provider == "anthropic"
    if anthropic_body == (provider == "anthropic"):
        return body
    out = {k: v for k, v in body.items() if k not in ("system", "tools", "messages")}
    tools = [t for t in body.get("tools") or () if isinstance(t, Mapping)]
    if anthropic_body:
        _front_as_chat(body, messages, tools, out)
    else:
        _front_as_anthropic(messages, tools, out)
    return out


def _front_as_chat(
    body: Mapping[str, Any], messages: list[Any], tools: list[Any], out: dict[str, Any]
) -> None:
    """An Anthropic body's ``system`` as the first chat message, its tools as functions."""
    system = body.get("system")
    text = system if isinstance(system, str) else None
    if isinstance(system, list):
        text = "\n\n".join(block_text(b) for b in system)
    out["messages"] = ([{"role": "system", "content": text}] if text else []) + messages
    if tools:
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema", {}),
                },
            }
            for t in tools
        ]


def _front_as_anthropic(messages: list[Any], tools: list[Any], out: dict[str, Any]) -> None:
    """A chat body's leading system (and developer) messages as ``system``, its functions as
    tools."""
    lead = 0
    while lead < len(messages) and _role(messages[lead]) in ("system", "developer"):
        lead += 1
    texts = [block_text(m.get("content") or "") for m in messages[:lead]]
    if texts:
        out["system"] = [{"type": "text", "text": t} for t in texts]
    out["messages"] = messages[lead:]
    if tools:
        out["tools"] = [_anthropic_tool(t) for t in tools]


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def _anthropic_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return tool
    return {
        "name": function.get("name"),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters", {}),
    }


def _breakpoints(
    flat: Flat, body: Mapping[str, Any], name: str, first: int | None, judge_size: bool = True
) -> list[Finding]:
    table = rules(name)
    findings: list[Finding] = []
    marks = [(p, ttl) for p, ttl in enumerate(flat.ttls) if ttl is not None]
    limit = int(table.value("max_breakpoints"))
    if flat.breakpoints > limit:
        findings.append(
            Finding(
                "too_many_breakpoints",
                "cache_control",
                f"{flat.breakpoints} breakpoints; the provider allows {limit}",
            )
        )
    seen_short: int | None = None
    minimum = table.min_tokens(flat.model)[0]
    for p, ttl in marks:
        location = locate(flat.where[p], body, name)
        if ttl == "5m" and seen_short is None:
            seen_short = p
        if ttl == "1h" and seen_short is not None:
            findings.append(
                Finding(
                    "ttl_order",
                    location,
                    "a 1-hour breakpoint after a 5-minute one: longer TTLs must come first",
                )
            )
        if first is not None and first <= p:
            first_reported = first
            first = None  # one finding, at the first breakpoint after the volatile value
            findings.append(
                Finding(
                    "unstable_breakpoint",
                    location,
                    f"a volatile value at {locate(flat.where[first_reported], body, name)} "
                    "lies before "
                    "this breakpoint: its entry is lost whenever that value changes",
                )
            )
        elif judge_size and first is None and flat.cum[p] < minimum and p == marks[-1][0]:
            findings.append(
                Finding(
                    "unstable_breakpoint",
                    location,
                    f"about {flat.cum[p]} tokens before this breakpoint, below the minimum of "
                    f"{minimum} for {flat.model or 'this model'}: nothing is cached",
                )
            )
    return findings
