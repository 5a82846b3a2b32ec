"""What the archive stores and gives back: items removed by a handoff, keyed by session and id.

`Item` is a listing row (kind, tool, argument preview, size); `Recalled` adds the exact JSON of
the call and of its result. `ArchiveStore` is the protocol every backend follows. The archive
sits below the handoff in the layers, so it takes removed items by their shape (`Archivable`), not
by the handoff's class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ipse.archive._index import Ask
    from ipse.archive._scope import Scope


class Archivable(Protocol):
    """What the archive needs of a removed item (`ipse.handoff.Removed` has this shape)."""

    @property
    def kind(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def call(self) -> Mapping[str, Any] | None: ...
    @property
    def result(self) -> Mapping[str, Any] | None: ...
    @property
    def message(self) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    """One archived item, as listed.

    ``id`` is the item's id, or, where two different items of one session share it (two
    conversations filed under one session key), ``id@`` and the first hex digits of its content
    address, which is how `recall` tells them apart. ``action`` is what the call did (read,
    edit, command, other) and ``paths`` the paths it named (`ipse.archive._facets`)."""

    session: str
    id: str
    kind: str
    tool: str
    preview: str
    size: int  # bytes of the call and result JSON together
    position: int  # message index in the input it was removed from
    action: str = "other"
    paths: tuple[str, ...] = ()
    seq: int = 0  # its place in the archive: later items have larger numbers

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "id": self.id,
            "kind": self.kind,
            "tool": self.tool,
            "action": self.action,
            "paths": list(self.paths),
            "preview": self.preview,
            "size": self.size,
            "message": self.position,
        }


@dataclass(frozen=True, slots=True)
class Recalled:
    """An archived item with its original JSON: the call (or block) and its result."""

    item: Item
    call: bytes
    result: bytes | None


@dataclass(frozen=True, slots=True)
class Match:
    """A search hit: the item, a one-line excerpt around the first word asked for, and where
    the words were found (``call``: all in the call and its paths; ``output``: some only in
    the output)."""

    item: Item
    excerpt: str
    found_in: str

    def to_json(self) -> dict[str, Any]:
        return {**self.item.to_json(), "excerpt": self.excerpt, "found_in": self.found_in}


@dataclass(frozen=True, slots=True)
class Found:
    """A search's answer: the matches, best first, and how the store searched (``fts5``,
    ``tsvector``, or ``scan`` where SQLite has no FTS5)."""

    matches: tuple[Match, ...]
    method: str


class ArchiveSink(Protocol):
    """Where a handoff puts what it removed: the part of an archive a handoff run needs."""

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int: ...


class ArchiveStore(Protocol):
    """A durable archive of removed items."""

    url: str

    def put(self, session: str, removed: Sequence[Archivable], source: str) -> int:
        """Store the items (already stored ones are kept as they are); the number newly added."""
        ...

    def add_project(self, session: str, project: str) -> None:
        """File ``session`` under ``project`` too (a session may be in several)."""
        ...

    def items(self, session: str) -> list[Item]:
        """The items a session archived, in the order they were removed."""
        ...

    def sessions(self, scope: Scope | None = None) -> list[tuple[str, int]]:
        """Every session (in ``scope``) with its number of items."""
        ...

    def recall(self, item_id: str, session: str | None = None) -> Recalled:
        """One item with its exact JSON; `InputError` if unknown, `UsageError` if ambiguous."""
        ...

    def find(self, item_id: str, scope: Scope) -> Recalled:
        """One item of ``scope`` with its exact JSON (`recall` within a scope)."""
        ...

    def search(self, ask: Ask, scope: Scope, limit: int) -> Found:
        """The items of ``scope`` holding every word asked for, best first."""
        ...

    def listing(
        self, scope: Scope, action: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Item]:
        """The items of ``scope``, newest first."""
        ...

    def close(self) -> None: ...


def preview(removed: Archivable, width: int = 80) -> str:
    """A one-line preview of a removed item: its argument (the first non-empty text of the
    call's input, however the dialect carries it), else its output when the call has none."""
    raw: Mapping[str, Any] = removed.call or {}
    if removed.kind == "thinking":
        text = str(raw.get("thinking", "")) or "(redacted)"
    else:
        value: Any = raw.get("input")  # Anthropic tool_use; a Responses custom_tool_call
        if value is None:
            value = raw.get("arguments")  # a Responses function_call: a JSON string
        function = raw.get("function")
        if value is None and isinstance(function, Mapping):
            value = function.get("arguments", "")  # Chat Completions: a JSON string
        text = _argument_text(value)
        if not text.strip() and removed.result is not None:
            text = _output_text(removed.result)
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _argument_text(value: Any) -> str:
    """The first non-empty text of an argument: a mapping's first string (or list of strings,
    as a shell command's argv), a JSON object string read as that mapping, else the value."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        from ipse import jsonio

        text = value
        try:
            value = jsonio.loads(text)
        except ValueError:
            return text
    if isinstance(value, Mapping):
        for item in value.values():
            if isinstance(item, str) and item.strip():
                return item
            if isinstance(item, list) and item and all(isinstance(x, str) for x in item):
                return " ".join(item)
        return ""
    return "" if value is None else str(value)


def _output_text(result: Mapping[str, Any]) -> str:
    """The first text of a tool's output: ``content`` (Anthropic, Chat Completions) or
    ``output`` (Responses), a string or a list of text parts."""
    value = result.get("output", result.get("content"))
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for part in value:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


__all__ = [
    "Archivable",
    "ArchiveSink",
    "ArchiveStore",
    "Found",
    "Item",
    "Match",
    "Recalled",
    "preview",
]
