"""One entry point for reading any supported input: detect the format, run its reader.

`load` returns a `Source` that holds whichever shape the format has: one conversation (request
bodies, and the harness files of `ipse.transcript._harness`), threads cut into segments
(Claude Code sessions, Codex rollouts), or a sequence of recorded requests (HTTP logs).
`read_conversation` narrows any of them to the one conversation a transform works on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ipse import lifetime
from ipse.errors import InputError, UnknownFormat, UsageError
from ipse.jsonio import no_gc
from ipse.transcript._codec import DIALECTS, codec
from ipse.transcript._harness import HARNESS_FORMATS, read_harness
from ipse.transcript._jsonl import parse_json, read_text_bytes
from ipse.transcript._links import check_links
from ipse.transcript._model import Conversation
from ipse.transcript._sniff import FORMATS, detect
from ipse.transcript._thread import Thread
from ipse.transcript.formats.claude_code import MAIN, ClaudeCodeSession, read_session
from ipse.transcript.formats.codex import read_rollout
from ipse.transcript.formats.http_log import Exchange, read_http_log


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
    with no_gc():
        source = _load(path, format, thread, skip_bad_lines)
    lifetime.keep(source)  # (a one-shot command need not free it object by object)
    return source


def _load(path: str | Path, format: str | None, thread: str | None, skip_bad_lines: bool) -> Source:
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    name = format or detect(p)
    if name not in FORMATS:
        raise UnknownFormat(f"unknown format {name!r}; known: {', '.join(FORMATS)}", path=p)
    if thread not in (None, MAIN) and name != "claude-code":
        raise UsageError(f"--thread applies to claude-code sessions, not to {name}")
    warnings: list[str] = []
    if name in DIALECTS:
        body = parse_json(read_text_bytes(p), p)
        conversation = codec(name).read_body(body, source=str(p))
        check_links(conversation.messages, path=p)
        return Source(name, p, conversation=conversation)
    if name == "claude-code":
        session = read_session(p, skip_bad_lines=skip_bad_lines, warnings=warnings)
        return Source(
            name, p, thread=session.thread(thread or MAIN), session=session, warnings=warnings
        )
    if name in HARNESS_FORMATS:
        conversation = read_harness(p, name, warnings)
        check_links(conversation.messages, path=p)
        return Source(name, p, conversation=conversation, warnings=warnings)
    if name == "codex":
        rollout = read_rollout(p, skip_bad_lines=skip_bad_lines, warnings=warnings)
        return Source(name, p, thread=rollout, warnings=warnings)
    others: dict[str, int] = {}
    exchanges = read_http_log(p, skip_bad_lines=skip_bad_lines, warnings=warnings, others=others)
    return Source(name, p, exchanges=exchanges, warnings=warnings, other_exchanges=others)


def read_conversation(
    path: str | Path,
    format: str | None = None,
    *,
    thread: str | None = None,
    skip_bad_lines: bool = False,
) -> Conversation:
    """The one conversation of an input (for a session: what the model saw last)."""
    return load(path, format, thread=thread, skip_bad_lines=skip_bad_lines).current()
