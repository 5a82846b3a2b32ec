"""A Claude Code message record's content as notes of its blocks, read back from the file when
a caller needs the blocks themselves.

What the request messages of a thread are made of (`ipse.transcript._formats.claude_code_requests`)
rests on a few facts of each block: its type, the id of the tool call it makes or answers, and
whether the neutral model would write it back as it was read. A `StoredContent` holds those
facts (a `Note` per block) and where the record's line is in its file. Read with a ``digest``
(`ipse.transcript._formats.claude_code.read_session`), a session keeps only that of each message
record: the blocks are digested as their line is read (``ipse prefix``: a hash and a size per
block) and dropped, so a long session costs its notes, not its text. Read without one, the
record keeps its content too, and its notes are made when asked (`stored`).

A `StoredMessage` is one request message made of such records (several, when the grouping merged
a response's records, or a turn's tool results): a read-only mapping of ``role`` and
``content``, whose content is read back from the file, as the grouping would have built it,
when it is first asked for (the notes say what a replay needs without it). A line read back must
be the line read first: a file rewritten since is an error, not another answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ipse.errors import InputError
from ipse.jsonio import is_object

# (the block's "type" as written, or None for a block that is not an object; the id of the
# call a tool_use makes or a tool_result answers, else None; the reader's digest, or None)
Note = tuple[Any, Any, Any]

TEXT, LIST, NONE, OTHER = "text", "list", "none", "other"  # what the record's content was

Digest = Callable[[Any], Any]  # one block (an object, or the text block a string stands for)

_UNREAD = object()  # (a message's content not read back yet)


class StoredFile:
    """A session file whose message records' lines can be read again by where they start
    (`StoredContent.content`): how its lines are decoded (the reader's own), and the digest
    its blocks were taken with."""

    def __init__(self, path: Path, decode: Callable[[bytes, int], Any], digest: Digest) -> None:
        self.path = path
        self.digest = digest
        self._decode = decode  # (a line, its number) -> the record's message, as first read

    def content_at(self, at: int, size: int, line: int) -> Any:
        """The content of the message record whose line (``size`` bytes) starts at ``at``."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(at)
                data = handle.read(size)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=self.path) from exc
        message = self._decode(data, line) if len(data) == size else None
        if not isinstance(message, Mapping):
            raise self.changed(line)
        return message.get("content")

    def changed(self, line: int) -> InputError:
        return InputError(
            "the file changed while it was read (a line is not what it was)",
            path=self.path,
            position=f"line {line}",
        )


class StoredContent(NamedTuple):
    """A message record's content: its form (`TEXT`, `LIST`, `NONE`, `OTHER`), a `Note` per
    block (a string content is its one text block; null and an empty list have none), whether
    every block is one the neutral model writes back as read (`plain`), and the content itself
    (``kept``) or where to read it again (``file``, ``at``, ``size``, ``line``)."""

    form: str
    notes: tuple[Note, ...]
    plain: bool
    kept: Any = None
    file: StoredFile | None = None
    at: int = 0
    size: int = 0
    line: int = 0

    def content(self) -> Any:
        """The content as the record holds it (read back when it was not kept, and digested
        again: a line that gives other notes is not the line that was read)."""
        if self.file is None:
            return self.kept
        value = self.file.content_at(self.at, self.size, self.line)
        if notes_of(value, self.file.digest) != (self.form, self.notes, self.plain):
            raise self.file.changed(self.line)
        return value

    def call_ids(self) -> Iterator[Any]:
        """The ids of the tool calls among the blocks (as written)."""
        return (ident for kind, ident, _ in self.notes if kind == "tool_use")

    def only_results(self) -> bool:
        """Whether the content is a list of nothing but tool results."""
        return self.form == LIST and _all_results(self.notes)


def _all_results(notes: Sequence[Note]) -> bool:
    return bool(notes) and all(kind == "tool_result" for kind, _, _ in notes)


def notes_of(content: Any, digest: Digest | None) -> tuple[str, tuple[Note, ...], bool]:
    """A content's form, notes and plainness (see `StoredContent`), each block given to
    ``digest`` once when there is one."""
    if type(content) is list:
        notes = []
        plain = True
        for block in content:
            if type(block) is dict:
                kind = block.get("type")
                ident = (
                    block.get("id")
                    if kind == "tool_use"
                    else block.get("tool_use_id")
                    if kind == "tool_result"
                    else None
                )
                plain = plain and _plain_block(kind, block)
            else:
                kind = ident = None
                plain = False
            notes.append((kind, ident, digest(block) if digest is not None else None))
        return (LIST, tuple(notes), plain) if notes else (LIST, (), True)
    if type(content) is str:
        text = {"type": "text", "text": content}
        return TEXT, (("text", None, digest(text) if digest is not None else None),), True
    if content is None:
        return NONE, (), True
    return OTHER, (), False


def stored(content: Any, digest: Digest | None = None) -> StoredContent:
    """A content held in memory as `StoredContent` (notes made now, the content kept)."""
    if isinstance(content, StoredContent):
        return content
    form, notes, plain = notes_of(content, digest)
    return StoredContent(form, notes, plain, content)


def _plain_block(kind: Any, block: dict[str, Any]) -> bool:
    """Whether the neutral model writes ``block`` (an object) back as the very object it read."""
    if kind == "tool_use":
        return type(block.get("id")) is str and type(block.get("name")) is str
    if kind == "tool_result":
        return type(block.get("tool_use_id")) is str and plain_content(block.get("content"))
    if kind == "thinking":
        signature = block.get("signature")
        return type(block.get("thinking")) is str and (signature is None or type(signature) is str)
    return True


def plain_content(content: Any) -> bool:
    """Whether a content (a tool result's) is null, text, or a list of plain blocks."""
    if content is None or type(content) is str:
        return True
    if type(content) is not list:
        return False
    for block in content:
        if type(block) is not dict or not _plain_block(block.get("type"), block):
            return False
    return True


def results_only(message: Mapping[str, Any]) -> bool:
    """Whether a message's content is a list of nothing but tool results (a `StoredMessage`'s
    notes say so without reading it back)."""
    if type(message) is StoredMessage:
        return message.is_list and _all_results(message.notes)
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(is_object(b) and b.get("type") == "tool_result" for b in content)
    )


class StoredMessage(Mapping[str, Any]):
    """A request message made of message records: its ``role``, the notes of its blocks in
    order (as `notes`), and its ``content`` read back from the records as the grouping built it
    (one record's content as it was, a string or a list, null as an empty list; merged records'
    blocks in one list, each record's string as its text block, a tool call the message held
    already left out). Equal to a mapping with the same items, as any mapping is."""

    __slots__ = ("_content", "merged", "notes", "parts", "role")

    def __init__(self, role: str, first: StoredContent) -> None:
        self.role = role
        self.notes: list[Note] = list(first.notes)
        # each record, and which of its notes the message holds (None: all)
        self.parts: list[tuple[StoredContent, tuple[int, ...] | None]] = [(first, None)]
        self.merged = False  # a record was merged in: the content is a list of blocks
        self._content: Any = _UNREAD

    def add(self, more: StoredContent, kept: tuple[int, ...] | None) -> None:
        """Merge a record in: its notes (those at ``kept``, None: all) after the message's."""
        self.merged = True
        self.parts.append((more, kept))
        if kept is None:
            self.notes.extend(more.notes)
        else:
            self.notes.extend(more.notes[k] for k in kept)

    @property
    def is_list(self) -> bool:
        """Whether the content is a list (a message of one string record is that string)."""
        return self.merged or self.parts[0][0].form != TEXT

    @property
    def content(self) -> Any:
        """The content (see the class's docstring), read back the first time it is asked for
        and kept: one object, as a dict's content is."""
        if self._content is _UNREAD:
            self._content = self._read()
        return self._content

    def _read(self) -> Any:
        first = self.parts[0][0]
        if not self.merged:
            value = first.content()
            return list(value) if type(value) is list else value if first.form == TEXT else []
        blocks: list[Any] = []
        for part, kept in self.parts:
            value = part.content()
            own = [{"type": "text", "text": value}] if part.form == TEXT else list(value or ())
            blocks.extend(own if kept is None else [own[k] for k in kept])
        return blocks

    def __getitem__(self, key: str) -> Any:
        if key == "role":
            return self.role
        if key == "content":
            return self.content
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """(As `Mapping.get`, without its exception: the role is asked of every message.)"""
        if key == "role":
            return self.role
        return self.content if key == "content" else default

    def __contains__(self, key: object) -> bool:
        return key in ("role", "content")

    def __iter__(self) -> Iterator[str]:
        return iter(("role", "content"))

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:
        return f"StoredMessage({self.role!r}, {len(self.notes)} blocks)"


__all__ = [
    "LIST",
    "NONE",
    "OTHER",
    "TEXT",
    "Digest",
    "Note",
    "StoredContent",
    "StoredFile",
    "StoredMessage",
    "notes_of",
    "plain_content",
    "results_only",
    "stored",
]
