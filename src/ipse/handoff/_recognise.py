"""Recognising a checkpoint call, however a harness delivers it: the one test every part asks.

The checkpoint tool is ``micro_handoff`` (names configurable). Harnesses deliver a call of it in
several shapes, and the CLI, the library, the proxy and the report recognise all of them by
asking `checkpoint_tool_of` (a `ToolCall`) or `checkpoint_base` (the parts of a raw call):

- direct: ``micro_handoff``;
- served by an MCP server: ``mcp__<server>__micro_handoff`` (Claude Code, Codex), and
  ``mcp_<server>_micro_handoff`` (Gemini CLI);
- namespaced: a Responses ``function_call`` with ``namespace: "mcp__<server>__"`` (or without
  the trailing ``__``) and ``name: "micro_handoff"`` (Codex's deferred tool namespaces);
- deferred through a code-execution tool: Codex's ``exec`` (code mode; a freeform
  ``custom_tool_call`` whose input is JavaScript, e.g. ``await
  tools.mcp__ipse__micro_handoff({...})``, or ``tools["mcp__ipse__micro_handoff"](...)``) and
  its older ``js_repl``: the call is a checkpoint when its source calls the checkpoint tool on
  the ``tools`` object;
- from its output: ipse's checkpoint tool answers ``Checkpoint checkpoint-<16 hex> recorded for
  session <key>.`` (`MARKER`, written by the MCP server), so a call through a code tool or an
  MCP server whose name says nothing (``tools[name](...)``, a renamed tool) is recognised once
  it is answered. Only such calls are checked this way: a shell command that prints the sentence
  is not a checkpoint.

Sources for the Codex shapes: Codex CLI 0.169's ``exec`` tool description ("All nested tools
are available on the global `tools` object, for example `await tools.exec_command(...)` ...
`await tools.mcp__ologs__get_profile(...)`"), and its test suite's
``ev_function_call_with_namespace`` / ``ev_custom_tool_call(id, "exec", source)`` events
(github.com/openai/codex, codex-rs/core/tests).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ipse._names import Names
from ipse.transcript import Text, ToolCall, ToolResult

CHECKPOINT_TOOL = "micro_handoff"
CHECKPOINT_TOOLS: tuple[str, ...] = (CHECKPOINT_TOOL,)

# Tools that run code calling other tools by name on a ``tools`` object: Codex's code mode
# (``exec``) and its JavaScript REPL (``js_repl``).
CODE_TOOLS = Names({"exec", "js_repl"})

# What ipse's checkpoint tool answers (the MCP server's result text starts with it).
MARKER = re.compile(
    r"Checkpoint (checkpoint-[0-9a-f]{16}) recorded for session ([^\s\"\\]+?)\.(?=[\s\"\\]|$)"
)

_CODE_CALL = re.compile(
    r"""(?<![\w$])tools\s*(?:\.\s*([A-Za-z_$][\w$]*)|\[\s*(["'`])([^"'`\n]{1,200})\2\s*\])\s*\("""
)


def checkpoint_name(
    name: str, tool_names: Sequence[str] = CHECKPOINT_TOOLS, namespace: str | None = None
) -> str | None:
    """The checkpoint tool (one of ``tool_names``) a tool name calls, or None: the name itself,
    ``mcp__<server>__<tool>``, Gemini's ``mcp_<server>_<tool>``, or ``<tool>`` in an MCP
    ``namespace``."""
    if not isinstance(name, str):
        return None
    names = [name]
    if isinstance(namespace, str) and namespace:
        names.append(namespace + name if namespace.endswith("__") else f"{namespace}__{name}")
    for candidate in names:
        if candidate in tool_names:
            return candidate
        if candidate.startswith("mcp__"):
            server, sep, tool = candidate[5:].rpartition("__")
            if sep and server and tool in tool_names:
                return tool
        elif candidate.startswith("mcp_"):
            rest = candidate[4:]
            for tool in tool_names:
                server = rest[: -len(tool) - 1]
                if rest.endswith("_" + tool) and server.strip("_"):
                    return tool
    return None


def is_checkpoint(name: str, tool_names: Sequence[str] = CHECKPOINT_TOOLS) -> bool:
    """Whether a tool name calls a checkpoint tool: one of ``tool_names``, or one of them served
    by an MCP server (``mcp__<server>__<name>``, Gemini's ``mcp_<server>_<name>``). A call
    through a namespace or a code tool needs the call itself, which `strip` and `run` read."""
    return checkpoint_name(name, tool_names) is not None


def code_calls(source: str) -> list[str]:
    """The names a code tool's source calls on the ``tools`` object, in order."""
    return [m.group(1) or m.group(3) for m in _CODE_CALL.finditer(source)]


def checkpoint_base(
    name: str,
    tool_names: Sequence[str] = CHECKPOINT_TOOLS,
    *,
    namespace: str | None = None,
    code: str | None = None,
    output: str | None = None,
) -> str | None:
    """The checkpoint tool a raw call calls (see the module docstring), or None. ``code`` is the
    call's source when it is a code tool's, ``output`` its result's text when answered."""
    found = checkpoint_name(name, tool_names, namespace)
    if found is not None:
        return found
    coded = name in CODE_TOOLS
    if coded and code:
        for called in code_calls(code):
            found = checkpoint_name(called, tool_names)
            if found is not None:
                return found
    mcp = name.startswith("mcp") or (isinstance(namespace, str) and namespace.startswith("mcp"))
    if (coded or mcp) and output and tool_names and MARKER.search(output):
        return tool_names[0]
    return None


def may_need_output(name: str, namespace: str | None = None) -> bool:
    """Whether a call not recognised by its name and source could be by its output."""
    return name in CODE_TOOLS or name.startswith("mcp") or str(namespace or "").startswith("mcp")


def checkpoint_tool_of(
    call: ToolCall, tool_names: Sequence[str] = CHECKPOINT_TOOLS, result: ToolResult | None = None
) -> str | None:
    """The checkpoint tool ``call`` calls (answered by ``result`` when given), or None."""
    raw = call.raw if isinstance(call.raw, Mapping) else {}
    namespace = raw.get("namespace")
    return checkpoint_base(
        call.name,
        tool_names,
        namespace=namespace if isinstance(namespace, str) else None,
        code=source_of(call.input, call.arguments) if call.name in CODE_TOOLS else None,
        output=result_text(result) if result is not None else None,
    )


def is_checkpoint_call(
    call: ToolCall, tool_names: Sequence[str] = CHECKPOINT_TOOLS, result: ToolResult | None = None
) -> bool:
    """Whether ``call`` is a checkpoint call (see `checkpoint_tool_of`)."""
    return checkpoint_tool_of(call, tool_names, result) is not None


def source_of(value: Any, arguments: str | None = None) -> str:
    """The source text of a code tool's input: the string itself, or the strings of an object
    of arguments (a function-style code tool's ``{"code": ...}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(v for v in value.values() if isinstance(v, str))
    return arguments or ""


def result_text(result: ToolResult) -> str:
    """A result's text, however its content is shaped."""
    content = result.content
    if isinstance(content, str):
        return content
    parts = [b.text for b in content if isinstance(b, Text)]
    for block in content:
        raw = block.raw if not isinstance(block, Text) else None
        if isinstance(raw, Mapping) and isinstance(raw.get("text"), str):
            parts.append(raw["text"])
    return "\n".join(parts)


def raw_text(value: Any) -> str:
    """The text of a raw output value: a string, or a list of parts with ``text``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(
            p["text"] if isinstance(p, Mapping) and isinstance(p.get("text"), str) else ""
            for p in value
        )
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    return ""


def marked(text: str) -> tuple[str, str] | None:
    """The checkpoint id and session a checkpoint tool's answer names, or None."""
    found = MARKER.search(text)
    return (found.group(1), found.group(2)) if found else None


__all__ = [
    "CHECKPOINT_TOOL",
    "CHECKPOINT_TOOLS",
    "CODE_TOOLS",
    "MARKER",
    "checkpoint_base",
    "checkpoint_name",
    "checkpoint_tool_of",
    "code_calls",
    "is_checkpoint",
    "is_checkpoint_call",
    "marked",
    "may_need_output",
    "raw_text",
    "result_text",
    "source_of",
]
