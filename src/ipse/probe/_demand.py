"""Demand: which facts from before a cut the session used after it; re-discovery: which later
tool calls re-read what the context already held.

A fact is demanded when a later tool input or a later human or agent text cites its value (the
same string found by the same extraction), or when it is standing (a constraint or the open
task, which hold for the rest of the session whatever is said later). That is the honest weight
of a fact: what the agent needed next, not what it might have needed.

Re-discovery counts later calls that repeat a read made before the cut: the same file read
again (a read-like tool's path, ``str_replace_editor view``) or the same shell command run
again, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ipse.handoff._shared import command_of, read_path
from ipse.probe._facts import FactIndex, SessionFact
from ipse.transcript import Message, ToolCall


@dataclass(frozen=True, slots=True)
class Rediscovery:
    """Later calls that repeated a read from before the cut."""

    files: int  # the same file read again
    commands: int  # the same command run again
    examples: tuple[str, ...]  # the first few, as in the session

    @property
    def total(self) -> int:
        return self.files + self.commands


def demanded(index: FactIndex, facts: Sequence[SessionFact], cut: int) -> list[SessionFact]:
    """The facts of ``facts`` (those before ``cut``) that the session used after it."""
    cited = index.cited(cut)
    return [f for f in facts if f.standing or f.value in cited]


def read_signature(call: ToolCall) -> tuple[str, str] | None:
    """What a call reads: ``("file", path)`` or ``("command", text)``; None for other calls."""
    path = read_path(call)
    if path is not None:
        return ("file", path)
    command = command_of(call)
    if command:
        return ("command", command.strip())
    return None


def rediscovery(messages: Sequence[Message], cut: int, limit: int = 5) -> Rediscovery:
    """The later calls (at or after ``cut``) that repeat a read made before it."""
    before = {
        s
        for m in messages[:cut]
        for b in m.blocks
        if isinstance(b, ToolCall) and (s := read_signature(b)) is not None
    }
    files = commands = 0
    examples: list[str] = []
    for message in messages[cut:]:
        for block in message.blocks:
            if not isinstance(block, ToolCall):
                continue
            signature = read_signature(block)
            if signature is None or signature not in before:
                continue
            if signature[0] == "file":
                files += 1
            else:
                commands += 1
            if len(examples) < limit:
                examples.append(f"{block.name}: {signature[1]}")
    return Rediscovery(files, commands, tuple(examples))


__all__ = ["Rediscovery", "demanded", "read_signature", "rediscovery"]
