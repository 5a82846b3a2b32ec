"""The tool definitions as the wire carries them, written once into ``tools.json``.

A harness asks for the tools right after it starts the server, and sends its first request to
the model when they arrive (or without them). Building the definitions imports the checkpoint
and twin code (a tenth of a second and more); reading them from ``tools.json`` costs a file
read. `wire_tools` is the ``tools`` array of a ``tools/list`` answer for a server's settings:
the same bytes every time, so the definitions a harness puts in each request never change
within a session (a changed array breaks the prompt cache).

``tools.json`` is generated from `ipse.mcp._tools.tools` by ``python -m ipse.mcp._listing``;
a test fails when the two differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("tools.json")
TWIN_PREFIX = "twin_"


def build() -> list[dict[str, Any]]:
    """Every tool's definition (name, description, input schema), from the tool table."""
    from ipse.mcp._tools import tools

    return [
        {"name": t.name, "description": t.description, "inputSchema": dict(t.schema)}
        for t in tools()
    ]


def load() -> list[dict[str, Any]]:
    """Every tool's definition, from ``tools.json``."""
    found: list[dict[str, Any]] = json.loads(FILE.read_bytes())
    return found


def wire_tools(twin: bool, definitions: list[dict[str, Any]] | None = None) -> bytes:
    """The JSON array of the tools a server offers (the twin_* tools only with a twin)."""
    chosen = [
        d for d in (load() if definitions is None else definitions)
        if twin or not d["name"].startswith(TWIN_PREFIX)
    ]  # fmt: skip
    return json.dumps(chosen, ensure_ascii=False, separators=(",", ":")).encode()


def write() -> None:
    """Regenerate ``tools.json`` from the tool table."""
    text = json.dumps(build(), ensure_ascii=False, indent=1) + "\n"
    FILE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write()

__all__ = ["FILE", "build", "load", "wire_tools", "write"]
