"""The handoff notes: the checkpoint tool's definition, and the renderer of what the agent wrote.

The ``micro_handoff`` tool asks for facts, not narrative: what is done, what is open, what went
wrong and which approaches were rejected and why, the working directory and repository, recipes
worth keeping verbatim (exact commands), and claims each marked ``measured`` or ``inferred`` with
their evidence; optionally a ``budget``, the tokens the handoff at this checkpoint may keep
(`ipse.handoff.HandoffOptions.budget`, which the call's own argument overrides).
`tool_definition` gives it in Anthropic or OpenAI shape; `render_notes` turns the agent's JSON
into the compact text that stays in the conversation as the tool's result. Rendering is
deterministic: the same notes give the same text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ipse.errors import InputError
from ipse.handoff._cut import CHECKPOINT_TOOL
from ipse.transcript._shared import codec

DESCRIPTION = (
    "Record a checkpoint. Your tool calls, their results and your thinking before this point "
    "will be removed from the conversation; your own words and these notes stay. Write facts, "
    "not narrative: what is done, what is open, what went wrong and which approaches you "
    "rejected and why, where you work, the exact commands worth keeping, and each claim marked "
    "measured (seen in a tool result) or inferred, with its evidence."
)

_STRINGS = {"type": "array", "items": {"type": "string"}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "done": {**_STRINGS, "description": "What is finished, one fact per item."},
        "open": {**_STRINGS, "description": "What is still to do, most urgent first."},
        "went_wrong": {**_STRINGS, "description": "Errors and surprises met, with specifics."},
        "rejected": {
            "type": "array",
            "description": "Approaches tried or considered and dropped, and why.",
            "items": {
                "type": "object",
                "properties": {"approach": {"type": "string"}, "why": {"type": "string"}},
                "required": ["approach", "why"],
                "additionalProperties": False,
            },
        },
        "cwd": {"type": "string", "description": "The working directory."},
        "repository": {"type": "string", "description": "Repository (URL or path) and branch."},
        "recipes": {
            "type": "array",
            "description": "Exact commands worth keeping verbatim, each with its purpose.",
            "items": {
                "type": "object",
                "properties": {"purpose": {"type": "string"}, "command": {"type": "string"}},
                "required": ["purpose", "command"],
                "additionalProperties": False,
            },
        },
        "budget": {
            "type": "integer",
            "minimum": 1,
            "description": "Optional: hold what stays of the conversation before this point to "
            "about this many tokens. Your oldest narration then goes to the archive as one "
            "item (recall gives it back word for word); the human's words, these notes and the "
            "ledger of your tool calls stay.",
        },
        "claims": {
            "type": "array",
            "description": "Claims the next steps rely on, each measured or inferred.",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string"},
                    "status": {"type": "string", "enum": ["measured", "inferred"]},
                    "evidence": {"type": "string"},
                },
                "required": ["claim", "status", "evidence"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["done", "open"],
    "additionalProperties": False,
}


def tool_definition(provider: str = "anthropic", name: str = CHECKPOINT_TOOL) -> dict[str, Any]:
    """The checkpoint tool in a dialect's shape (``openai`` stands for ``openai-chat``)."""
    return codec(provider).tool(name, DESCRIPTION, SCHEMA)


def check_notes(notes: Any) -> Mapping[str, Any]:
    """The notes, if they follow `SCHEMA`; `InputError` naming the first field that does not."""
    if not isinstance(notes, Mapping):
        raise InputError("handoff notes must be a JSON object")
    properties = SCHEMA["properties"]
    for key in notes:
        if key not in properties:
            raise InputError(f"handoff notes: unknown field {key!r}")
    for key in SCHEMA["required"]:
        if key not in notes:
            raise InputError(f"handoff notes: missing field {key!r}")
    for key, spec in properties.items():
        if key in notes:
            _check(notes[key], spec, key)
    return notes


def _check(value: Any, spec: Mapping[str, Any], where: str) -> None:
    kind = spec["type"]
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool) or value < spec["minimum"]:
            raise InputError(f"handoff notes: {where} must be a whole number, at least 1")
    elif kind == "string":
        if not isinstance(value, str):
            raise InputError(f"handoff notes: {where} must be a string")
        if "enum" in spec and value not in spec["enum"]:
            raise InputError(f"handoff notes: {where} must be one of {', '.join(spec['enum'])}")
    elif kind == "array":
        if not isinstance(value, list):
            raise InputError(f"handoff notes: {where} must be a list")
        for i, item in enumerate(value):
            _check(item, spec["items"], f"{where}[{i}]")
    elif kind == "object":
        if not isinstance(value, Mapping):
            raise InputError(f"handoff notes: {where} must be an object")
        for key in spec["required"]:
            if key not in value:
                raise InputError(f"handoff notes: {where} needs {key!r}")
        for key, item in value.items():
            if key not in spec["properties"]:
                raise InputError(f"handoff notes: {where} has unknown field {key!r}")
            _check(item, spec["properties"][key], f"{where}.{key}")


def render_notes(notes: Mapping[str, Any]) -> str:
    """The notes as compact text: one heading per non-empty section, one line per item."""
    check_notes(notes)
    lines = ["Handoff notes"]
    where = [f"cwd {notes['cwd']}" if notes.get("cwd") else "", notes.get("repository", "")]
    if any(where):
        lines.append("Where: " + "; ".join(w for w in where if w))
    _section(lines, "Done", notes.get("done", ()))
    _section(lines, "Open", notes.get("open", ()))
    _section(lines, "Went wrong", notes.get("went_wrong", ()))
    _section(lines, "Rejected", [f"{r['approach']}: {r['why']}" for r in notes.get("rejected", ())])
    _section(
        lines, "Recipes", [f"{r['purpose']}: {r['command']}" for r in notes.get("recipes", ())]
    )
    _section(
        lines,
        "Claims",
        [
            f"[{c['status']}] {c['claim']} (evidence: {c['evidence']})"
            for c in notes.get("claims", ())
        ],
    )
    return "\n".join(lines)


def _section(lines: list[str], title: str, items: Sequence[str]) -> None:
    if items:
        lines.append(f"{title}:")
        lines.extend(f"- {item}" for item in items)


__all__ = ["DESCRIPTION", "SCHEMA", "check_notes", "render_notes", "tool_definition"]
