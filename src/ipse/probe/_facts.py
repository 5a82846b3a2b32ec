"""Facts, extracted deterministically from a session: artifacts, grit, constraints, open task.

A fact is a string as it stands in the session (a path, a command, a rule the human gave), its
kind, and where it lives: ``human``, ``agent`` or ``harness`` text, ``notes`` (the checkpoint
tool's call and result), ``tool_input``, ``tool_result``, ``thinking``, or ``state`` (the state
directory's invariants). Extraction is per message and cached (`FactIndex`), so many cuts over one
session read each message once. No rule names a file or a project: every pattern is a shape
(a slash-separated path, ``name.ext:line``, a word ending in ``Error``, an imperative sentence).

Kinds and their ``sub``-kinds:

- ``artifact``: created, edited, deleted, moved (file paths), committed (messages), branched;
- ``grit``: path, file_line, url, identifier (in backticks), number (with a unit), test, error,
  command (with its exit status where the result says it);
- ``constraint``: imperative (a human sentence with never/don't/always/must/only/...),
  invariant (a line of ``state/10_invariants.md`` beside the session);
- ``task``: request (the last human request before the cut), next_step (the agent's last
  stated next step).

Constraints and the open task are *standing*: they hold for the rest of the session whether or
not a later message repeats them, so the demand counts them always.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ipse.fileio import check_text_head, read_bytes
from ipse.handoff._shared import command_of, exit_status, first_line, is_checkpoint_call
from ipse.handoff.effects import artifacts
from ipse.probe._grit import grit
from ipse.probe._timeline import Timeline, call_text
from ipse.transcript import Message, Text, Thinking, ToolCall, ToolResult
from ipse.transcript._shared import Origin

KINDS = ("artifact", "grit", "constraint", "task")
STANDING = frozenset({"constraint", "task"})
WHERE = ("human", "agent", "harness", "notes", "tool_input", "tool_result", "thinking", "state")

_IMPERATIVE = re.compile(
    r"\b(?:never|don'?t|do not|always|must|only|avoid|make sure|should ?n[o']t|no more)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s++|\n++")
_NEXT = re.compile(
    r"^\s*+(?:let me|let's|i'll|i will|next,?|now,? (?:i|let)|i need to|then i|i'm going to)\b",
    re.IGNORECASE,
)
_MAX = 400  # longest fact value kept (longer sentences are cut at a word boundary)
# Paths that say nothing about the work: devices and the kernel's files, a system folder alone.
_TRIVIAL = re.compile(r"^/(?:dev|proc|sys)(?:/|$)|^/(?:tmp|usr|etc|var|bin|opt|home|root)/?$")
_ELLIPSIS = " ..."


@dataclass(frozen=True, slots=True)
class SessionFact:
    """One fact: its kind, sub-kind, the string as in the session, where it lives, and the index
    of the message it first appears in. ``status`` is a command's exit status when known."""

    kind: str
    sub: str
    value: str
    where: tuple[str, ...]
    first: int
    status: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.sub, self.value)

    @property
    def standing(self) -> bool:
        return self.kind in STANDING


@dataclass
class _Found:
    """One message's facts: ``key -> locations``, and its command statuses."""

    facts: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, sub: str, value: str, where: str) -> None:
        value = value.strip()
        if len(value) >= 2 and value not in ("./", "../", "//") and not trivial(value):
            self.facts.setdefault((kind, sub, value), set()).add(where)


def trivial(value: str) -> bool:
    """A path that says nothing about the work (``/dev/null``, ``/proc/self/fd/1``, ``/tmp``)."""
    return value.startswith("/") and _TRIVIAL.match(value) is not None


def command_line(command: str) -> str:
    """A command as a fact: its first meaningful line (not blank, not a comment), cut at 120
    characters as the handoff's ledger cuts it (`ipse.handoff.effects.first_line`)."""
    line = first_line(command)
    return line[: -len(_ELLIPSIS)] if line.endswith(_ELLIPSIS) else line


def imperatives(text: str) -> Iterator[str]:
    """The human's sentences that instruct or forbid."""
    for sentence in _sentences(text):
        if _IMPERATIVE.search(sentence) and len(sentence) >= 8:
            yield _short(sentence)


def _short(text: str) -> str:
    text = text.strip()
    if len(text) <= _MAX:
        return text
    return text[:_MAX].rsplit(" ", 1)[0]


def _where(message: Message, block: Text | Thinking) -> str:
    if isinstance(block, Thinking):
        return "thinking"
    if block.origin == Origin.HUMAN:
        return "human"
    if block.origin == Origin.AGENT:
        return "agent"
    return "harness"


class FactIndex:
    """The facts of every message of a timeline, extracted once, and what each message cites."""

    def __init__(self, line: Timeline, invariants: Sequence[str] = ()) -> None:
        self.timeline = line
        self.invariants = tuple(invariants)
        notes: set[str] = set()
        self._found: list[_Found] = []
        self._cites: list[frozenset[str]] = []
        results = {
            b.call_id: b for m in line.messages for b in m.blocks if isinstance(b, ToolResult)
        }
        for message in line.messages:
            found, cites = _Found(), set[str]()
            for block in message.blocks:
                if isinstance(block, ToolCall):
                    result = results.get(block.id)
                    if is_checkpoint_call(block, result=result):
                        notes.add(block.id)
                    cites.update(_call_facts(found, block, result, block.id in notes))
                elif isinstance(block, ToolResult):
                    where = "notes" if block.call_id in notes else "tool_result"
                    _extract(found, block.text, where, None)
                elif isinstance(block, Text | Thinking):
                    where = _where(message, block)
                    values = _extract(found, block.text, where, None)
                    if where in ("human", "agent"):
                        cites.update(values)
            self._found.append(found)
            self._cites.append(frozenset(cites))

    def facts(self, cut: int) -> list[SessionFact]:
        """Every fact of messages ``[0, cut)``, in order of first appearance, then kind."""
        merged: dict[tuple[str, str, str], tuple[int, set[str]]] = {}
        status: dict[str, int] = {}
        for index, found in enumerate(self._found[:cut]):
            for key, where in found.facts.items():
                if key in merged:
                    merged[key][1].update(where)
                else:
                    merged[key] = (index, set(where))
            status.update(found.status)
        out = [
            SessionFact(
                k[0], k[1], k[2], _ordered(w), i, status.get(k[2]) if k[1] == "command" else None
            )
            for k, (i, w) in merged.items()
        ]
        out.extend(
            SessionFact("constraint", "invariant", _short(line), ("state",), -1)
            for line in self.invariants
        )
        out.extend(self._task(cut))
        out.sort(key=lambda f: (f.first, KINDS.index(f.kind), f.sub, f.value))
        return out

    def cited(self, start: int, end: int | None = None) -> frozenset[str]:
        """Every value the messages ``[start, end)`` cite in tool inputs or authored text."""
        out: set[str] = set()
        for cites in self._cites[start:end]:
            out.update(cites)
        return frozenset(out)

    def _task(self, cut: int) -> Iterator[SessionFact]:
        messages = self.timeline.messages[:cut]
        request = next_step = None
        for index in range(len(messages) - 1, -1, -1):
            for block in reversed(messages[index].blocks):
                if not isinstance(block, Text) or not block.text.strip():
                    continue
                if request is None and block.origin == Origin.HUMAN:
                    request = SessionFact("task", "request", _short(block.text), ("human",), index)
                if next_step is None and block.origin == Origin.AGENT:
                    steps = [
                        s for s in _sentences(block.text) if _NEXT.search(s) and len(s.split()) >= 4
                    ]
                    if steps:
                        next_step = SessionFact(
                            "task", "next_step", _short(steps[-1]), ("agent",), index
                        )
            if request is not None and next_step is not None:
                break
        yield from (f for f in (request, next_step) if f is not None)


def _call_facts(found: _Found, call: ToolCall, result: ToolResult | None, notes: bool) -> list[str]:
    """The facts of a tool call (the checkpoint's are its notes), its command's exit status
    from its result; the values it cites."""
    values = _extract(found, call_text(call), "notes" if notes else "tool_input", call)
    command = command_of(call)
    if command and result is not None:
        status = exit_status(result)
        if status is not None:
            found.status[command_line(command)] = status
    return values


def _sentences(text: str) -> list[str]:
    """A text's sentences: split after ``.``, ``!`` or ``?`` followed by space, and at lines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _extract(found: _Found, text: str, where: str, call: ToolCall | None) -> list[str]:
    values: list[str] = []
    if call is not None:
        for artifact in artifacts(call):
            found.add("artifact", artifact.action, artifact.value, where)
            values.append(artifact.value.strip())
        command = command_of(call)
        if command:
            found.add("grit", "command", command_line(command), where)
            values.append(command_line(command))
    for sub, value in grit(text, where):
        found.add("grit", sub, value, where)
        values.append(value.strip())
    if where == "human":
        for sentence in imperatives(text):
            found.add("constraint", "imperative", sentence, where)
    return values


def _ordered(where: Iterable[str]) -> tuple[str, ...]:
    return tuple(w for w in WHERE if w in set(where))


def read_invariants(session: Path) -> list[str]:
    """The invariants of a state directory beside the session (``state/10_invariants.md``), one
    per non-empty line that is not a heading; none when there is no such file."""
    for folder in (session.parent, session.parent.parent):
        path = folder / "state" / "10_invariants.md"
        if path.is_file():
            check_text_head(path, expected="text")
            lines = read_bytes(path).decode("utf-8", errors="replace").splitlines()
            return [
                line.lstrip("-*0123456789. ").strip()
                for line in lines
                if line.strip() and not line.lstrip().startswith("#")
            ]
    return []


__all__ = [
    "KINDS",
    "STANDING",
    "WHERE",
    "FactIndex",
    "SessionFact",
    "command_line",
    "grit",
    "imperatives",
    "read_invariants",
    "trivial",
]
