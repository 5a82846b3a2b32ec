"""The one table of input formats: each format's name, how it is recognised, which reader reads
it, what shape the reading has, and whether its conversation writes back as a request.

Everything that knows formats asks this table: `detect` runs its sniff tests in their ranks,
`load` runs the named reader for the shape, `write` refuses with the table's reason, the
command line offers its names to ``--format``, prefix analysis and the report ask a format's
shape. A new format is its reader module and one `Format` line here.

Readers and sniff tests are named (``"module:function"`` under ``ipse.transcript``), not
imported: importing the table imports no reader, and reading one format imports only what
its tests and reader need. A name is looked up on every use, so it is the module's current
function that runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

_PACKAGE = "ipse.transcript"


class Shape(Enum):
    """What reading a format gives, and so how `load` holds it, prefix analysis replays it,
    and what its reader is called with and returns:

    - ``BODY``: one request body; no reader, its dialect's codec reads (and writes) it.
    - ``SESSION``: ``read(path, *, skip_bad_lines, warnings)``, a `ClaudeCodeSession` of
      threads, each cut into segments (``--thread`` picks one).
    - ``ROLLOUT``: ``read(path, *, skip_bad_lines, warnings)``, one `Thread` of segments.
    - ``LOG``: ``read(path, *, skip_bad_lines, warnings, others)``, the recorded `Exchange`s
      (``others`` counts the exchanges that are no conversation turn).
    - ``CONVERSATION``: ``read(path, warnings)``, the one `Conversation` of a harness's file.
    """

    BODY = "body"
    SESSION = "session"
    ROLLOUT = "rollout"
    LOG = "log"
    CONVERSATION = "conversation"


class Where(Enum):
    """What a sniff test is shown."""

    FOLDER = "folder"  # the folder's path
    RECORD = "record"  # one JSONL record (the first that any format's test claims decides)
    HEADER = "header"  # the first record of a JSONL file none of whose records decided
    ARRAY = "array"  # a JSON document that is an array: its items
    DOCUMENT = "document"  # a JSON document that is an object


@dataclass(frozen=True, slots=True)
class Sniff:
    """One test that recognises a format: where it looks, its rank among every format's tests
    of that place (lower runs first: order is part of the answer), and the predicate."""

    where: Where
    rank: int
    test: str  # "module:function" under ipse.transcript


@dataclass(frozen=True, slots=True)
class Format:
    """One input format: what ``--format`` calls it, what its reading gives, the reader (a
    body has none: its dialect's codec reads it), how it is recognised, and why its
    conversation cannot be written back as a request (None: it can, through the codec of the
    dialect it is read in; a log's requests are bodies already)."""

    name: str
    shape: Shape
    read: str | None
    sniffs: tuple[Sniff, ...]
    read_only: str | None = None
    unrecorded: str | None = None  # what the requests it gives leave out of what was sent

    @property
    def writes_back(self) -> bool:
        """Whether its conversation is written back as a request body (a log's requests are
        bodies already: they are replayed as they are)."""
        return self.read_only is None and self.shape is not Shape.LOG

    def reader(self) -> Callable[..., Any]:
        """The reader function (imported now)."""
        if self.read is None:
            raise LookupError(f"{self.name} is read by its dialect's codec, not a reader")
        return resolve(self.read)


_F, _R, _H, _A, _D = Where.FOLDER, Where.RECORD, Where.HEADER, Where.ARRAY, Where.DOCUMENT

# In the order ``--format`` lists them (and the table of docs/formats.md).
FORMAT_TABLE: tuple[Format, ...] = (
    Format("anthropic", Shape.BODY, None, (Sniff(_D, 70, "_sniff:is_anthropic_body"),)),
    Format("openai-chat", Shape.BODY, None, (Sniff(_D, 71, "_sniff:has_messages"),)),
    Format("openai-responses", Shape.BODY, None, (Sniff(_D, 80, "_sniff:has_input"),)),
    Format(
        "claude-code",
        Shape.SESSION,
        "_formats.claude_code:read_session",
        (
            Sniff(_R, 20, "_formats.claude_code:looks_like_claude_code"),
            Sniff(_D, 90, "_formats.claude_code:looks_like_claude_code"),
        ),
    ),
    Format(
        "http-log",
        Shape.LOG,
        "_formats.http_log:read_http_log",
        (
            Sniff(_F, 20, "_sniff:holds_json_files"),
            Sniff(_R, 40, "_sniff:is_exchange_record"),
            Sniff(_D, 10, "_sniff:is_har"),
            Sniff(_D, 20, "_sniff:is_exchange"),
        ),
    ),
    Format(
        "codex",
        Shape.ROLLOUT,
        "_formats.codex:read_rollout",
        (
            Sniff(_R, 30, "_sniff:is_rollout_record"),
            Sniff(_R, 50, "_sniff:is_response_item"),
            Sniff(_H, 10, "_sniff:is_legacy_rollout_header"),
            Sniff(_D, 100, "_sniff:is_rollout_typed"),
        ),
        unrecorded="tool definitions",
    ),
    Format(
        "cline",
        Shape.CONVERSATION,
        "_harness:read_cline",
        (Sniff(_A, 10, "_formats.cline:looks_like_cline"),),
    ),
    Format(
        "swe-agent",
        Shape.CONVERSATION,
        "_harness:read_swe_agent",
        (Sniff(_D, 50, "_formats.swe_agent:looks_like_swe_agent"),),
    ),
    Format(
        "mini-swe-agent",
        Shape.CONVERSATION,
        "_harness:read_mini_swe_agent",
        (Sniff(_D, 40, "_formats.swe_agent:looks_like_mini_swe_agent"),),
    ),
    Format(
        "openhands",
        Shape.CONVERSATION,
        "_harness:read_openhands",
        (
            Sniff(_F, 10, "_formats.openhands:event_files"),
            Sniff(_A, 20, "_formats.openhands:looks_like_openhands"),
            Sniff(_D, 60, "_sniff:holds_openhands_events"),
        ),
        read_only=(
            "OpenHands builds its requests with prompts, condensers and tool schemas the "
            "events do not record"
        ),
    ),
    Format(
        "gemini-cli",
        Shape.CONVERSATION,
        "_harness:read_gemini_cli",
        (
            Sniff(_R, 10, "_sniff:is_gemini_record"),
            Sniff(_A, 30, "_formats.gemini_cli:looks_like_checkpoint"),
            Sniff(_D, 30, "_sniff:is_gemini_document"),
        ),
        read_only=(
            "a Gemini generateContent body is not a dialect ipse writes, and the thought "
            "signatures Gemini needs back are not recorded"
        ),
    ),
)

FORMATS: tuple[str, ...] = tuple(f.name for f in FORMAT_TABLE)
# Inputs whose conversation writes back as a request body (by their dialect's codec).
WRITABLE_FORMATS: tuple[str, ...] = tuple(f.name for f in FORMAT_TABLE if f.writes_back)
_BY_NAME = {f.name: f for f in FORMAT_TABLE}


def format_named(name: str) -> Format | None:
    """The format of that name, or None."""
    return _BY_NAME.get(name)


def of_shape(shape: Shape) -> tuple[str, ...]:
    """The names of the formats whose reading has that shape, in table order."""
    return tuple(f.name for f in FORMAT_TABLE if f.shape is shape)


@cache
def _ranked(where: Where) -> tuple[tuple[str, str], ...]:
    tests = [(s.rank, f.name, s.test) for f in FORMAT_TABLE for s in f.sniffs if s.where is where]
    return tuple((name, test) for _, name, test in sorted(tests))


def sniffers(where: Where) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    """Each format's test of ``where``, in rank order, as (format name, predicate)."""
    for name, test in _ranked(where):
        yield name, resolve(test)


def first_match(where: Where, value: Any) -> str | None:
    """The format whose test of ``where``, in rank order, first claims ``value``."""
    for name, test in sniffers(where):
        if test(value):
            return name
    return None


def resolve(ref: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` name under ``ipse.transcript`` means."""
    module, _, attribute = ref.partition(":")
    function: Callable[..., Any] = getattr(
        importlib.import_module(f"{_PACKAGE}.{module}"), attribute
    )
    return function


__all__ = [
    "FORMATS",
    "FORMAT_TABLE",
    "WRITABLE_FORMATS",
    "Format",
    "Shape",
    "Sniff",
    "Where",
    "first_match",
    "format_named",
    "of_shape",
    "resolve",
    "sniffers",
]
