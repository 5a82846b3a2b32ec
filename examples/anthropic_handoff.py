"""A small agent on the Anthropic SDK, with ipse's micro-handoff in the client.

    pip install 'ipse[anthropic]'
    python examples/anthropic_handoff.py "What is this project? Read README.md."

It talks to whatever server ANTHROPIC_BASE_URL names (the Anthropic API when unset), with
ANTHROPIC_API_KEY; IPSE_EXAMPLE_MODEL picks the model (default claude-sonnet-4-6). The agent reads
files in the current folder with one tool and records a checkpoint with `micro_handoff`. Every
request goes through `HandoffMiddleware` (what was removed is archived in ipse's home folder), and
`keep_handed_off` keeps the conversation's own list short after each checkpoint.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from anthropic import Anthropic

from ipse.adapters.anthropic import HandoffMiddleware, keep_handed_off
from ipse.errors import InputError
from ipse.handoff import render_notes, tool_definition

MODEL = os.environ.get("IPSE_EXAMPLE_MODEL", "claude-sonnet-4-6")
SYSTEM = (
    "You work in the current folder. Read the files you need with read_file. Once you have "
    "read them, call micro_handoff with your notes, then answer in a few lines."
)
READ_FILE = {
    "name": "read_file",
    "description": "Read a text file in the current folder.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
TOOLS: list[Any] = [READ_FILE, tool_definition("anthropic")]


def run_tool(name: str, arguments: Any) -> tuple[str, bool]:
    """The tool's result text, and whether it is an error."""
    if name == "micro_handoff":
        try:
            return render_notes(arguments), False
        except InputError as exc:
            return str(exc), True
    if name == "read_file":
        here = Path.cwd().resolve()
        path = (here / str(arguments.get("path", ""))).resolve()
        if here not in path.parents:
            return "only files inside the current folder can be read", True
        try:
            return path.read_text(errors="replace")[:4000], False
        except OSError as exc:
            return str(exc), True
    return f"no tool named {name}", True


def main() -> None:
    question = " ".join(sys.argv[1:]) or "What is this project? Read README.md, then answer."
    middleware = HandoffMiddleware(session="anthropic-example")
    client = Anthropic(middleware=[middleware])
    messages: list[Any] = [{"role": "user", "content": question}]
    for turn in range(1, 9):
        reply = client.messages.create(
            model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=messages
        )
        done = middleware.last
        removed = f", {done.removed_calls} tool calls removed" if done and done.applied else ""
        print(f"turn {turn}: {len(messages)} messages in the history{removed}")
        messages.append({"role": "assistant", "content": reply.content})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            print("".join(block.text for block in reply.content if block.type == "text"))
            return
        results = []
        for call in calls:
            text, error = run_tool(call.name, call.input)
            results.append(
                {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": error}
            )
        messages.append({"role": "user", "content": results})
        if any(call.name == "micro_handoff" for call in calls):
            before = len(messages)
            keep_handed_off(messages, model=MODEL)
            print(f"checkpoint: the history went from {before} to {len(messages)} messages")
    print("stopped after 8 turns")


if __name__ == "__main__":
    main()
