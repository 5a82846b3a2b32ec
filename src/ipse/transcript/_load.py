"""One entry point for reading any supported input: detect the format, run the reader the
format table (`ipse.transcript._table`) names for it, and hold what it gives by its shape.

`load` returns a `Source` that holds whichever shape the format has: one conversation (request
bodies, and the harness files of `ipse.transcript._harness`), threads cut into segments
(Claude Code sessions, Codex rollouts), or a sequence of recorded requests (HTTP logs).
`read_conversation` narrows any of them to the one conversation a transform works on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ipse.errors import InputError, UnknownFormat, UsageError
from ipse.transcript._codec import codec
from ipse.transcript._formats.claude_code import MAIN, ClaudeCodeSession
from ipse.transcript._harness import read_harness
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._links import check_links
from ipse.transcript._model import Conversation
from ipse.transcript._sniff import detect
from ipse.transcript._table import FORMATS, Format, Shape, format_named, of_shape
from ipse.transcript._thread import Thread

if TYPE_CHECKING:  # (read at run time only for a log of HTTP exchanges: a session never is)
    from ipse.transcript._formats.http_log import Exchange


@dataclass
class Source:
    """What was read from one input, in the shape its format has."""

    format: str
    path: Path
    conversation: Conversation | None = None
    thread: Thread | None = None
    session: ClaudeCodeSession | None = None
    exchanges: list[Exchange] | None = None
    warnings: list[str] = field(default_factory=list)
    # a log's exchanges that are not conversation turns, by method and path (``HEAD /``: 1)
    other_exchanges: dict[str, int] = field(default_factory=dict)

    def current(self) -> Conversation:
        """The conversation as the model last saw it."""
        if self.conversation is not None:
            return self.conversation
        if self.thread is not None:
            return self.thread.conversation
        if self.exchanges:
            return self.exchanges[-1].request
        raise InputError("no conversation in this input", path=self.path)


def load(
    path: str | Path,
    format: str | None = None,
    *,
    thread: str | None = None,
    skip_bad_lines: bool = False,
) -> Source:
    """Read a file or folder in the named format, or the detected one."""
    return _load(path, format, thread, skip_bad_lines)


def _load(path: str | Path, format: str | None, thread: str | None, skip_bad_lines: bool) -> Source:
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    name = format or detect(p)
    entry = format_named(name)
    if entry is None:
        raise UnknownFormat(f"unknown format {name!r}; known: {', '.join(FORMATS)}", path=p)
    if thread not in (None, MAIN) and entry.shape is not Shape.SESSION:
        sessions = " or ".join(of_shape(Shape.SESSION))
        raise UsageError(f"--thread applies to {sessions} sessions, not to {name}")
    return _BY_SHAPE[entry.shape](entry, p, _Reading(thread, skip_bad_lines))


@dataclass(frozen=True, slots=True)
class _Reading:
    thread: str | None
    skip_bad_lines: bool


def _body(entry: Format, p: Path, _: _Reading) -> Source:
    body = parse_json(read_text_bytes(p), p)
    conversation = codec(entry.name).read_body(body, source=str(p))
    check_links(conversation.messages, path=p)
    return Source(entry.name, p, conversation=conversation)


def _session(entry: Format, p: Path, reading: _Reading) -> Source:
    warnings: list[str] = []
    session: ClaudeCodeSession = entry.reader()(
        p, skip_bad_lines=reading.skip_bad_lines, warnings=warnings
    )
    thread = session.thread(reading.thread or MAIN)
    return Source(entry.name, p, thread=thread, session=session, warnings=warnings)


def _rollout(entry: Format, p: Path, reading: _Reading) -> Source:
    warnings: list[str] = []
    rollout: Thread = entry.reader()(p, skip_bad_lines=reading.skip_bad_lines, warnings=warnings)
    return Source(entry.name, p, thread=rollout, warnings=warnings)


def _log(entry: Format, p: Path, reading: _Reading) -> Source:
    warnings: list[str] = []
    others: dict[str, int] = {}
    exchanges: list[Exchange] = entry.reader()(
        p, skip_bad_lines=reading.skip_bad_lines, warnings=warnings, others=others
    )
    return Source(entry.name, p, exchanges=exchanges, warnings=warnings, other_exchanges=others)


def _conversation(entry: Format, p: Path, _: _Reading) -> Source:
    warnings: list[str] = []
    conversation = read_harness(p, entry.name, warnings)
    check_links(conversation.messages, path=p)
    return Source(entry.name, p, conversation=conversation, warnings=warnings)


# How each shape of reading is held (`_table.Shape`).
_BY_SHAPE: dict[Shape, Callable[[Format, Path, _Reading], Source]] = {
    Shape.BODY: _body,
    Shape.SESSION: _session,
    Shape.ROLLOUT: _rollout,
    Shape.LOG: _log,
    Shape.CONVERSATION: _conversation,
}


def read_conversation(
    path: str | Path,
    format: str | None = None,
    *,
    thread: str | None = None,
    skip_bad_lines: bool = False,
) -> Conversation:
    """The one conversation of an input (for a session: what the model saw last)."""
    return load(path, format, thread=thread, skip_bad_lines=skip_bad_lines).current()
