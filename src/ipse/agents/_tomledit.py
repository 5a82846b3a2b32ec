"""Format-preserving edits of a TOML file (Codex's ``config.toml``): one marked block of tables
at the end, and one marked top-level key.

The standard library's parser (``tomllib``) reads the file (to refuse invalid TOML, and keys ipse
would clash with) and checks the result; the edit itself is textual, so removing it gives the
original bytes back (a format-preserving TOML library, tomlkit, was tried: its deletions leave
blank lines behind, so uninstall could not give the file back byte for byte). The tables go
between ``# ipse:begin lead=N`` and ``# ipse:end`` lines (``N`` newlines install added before
them); a top-level key goes on one line ending in ``# ipse``, after the last top-level line
before the first table. What is added uses the file's own newline (CRLF stays CRLF), after any
byte order mark.

An agent CLI may rewrite the file itself (``codex mcp add`` re-renders it and drops comments, so
ipse's markers can go while its tables stay, moved or split): `remove_tables` then finds ipse's
tables by their headers and the caller decides by their content whether they are ipse's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ipse.agents._text import bom_length, ends_with_blank_line, newline_of, with_newline
from ipse.errors import InputError

_BEGIN = re.compile(r"(?m)^# ipse:begin lead=([0-9]+)\r?\n")
_END = re.compile(r"(?m)^# ipse:end(?:\r?\n|$)")
KEY_MARK = "  # ipse"


def parse_toml(text: str, path: str | Path = "") -> dict[str, Any]:
    """The parsed document; `InputError` for invalid TOML."""
    import tomllib

    try:
        return tomllib.loads(text[bom_length(text) :])
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path or None) from exc


def remove_toml_block(text: str) -> str:
    """``text`` without the marked block and the newlines install put before it."""
    match = _BEGIN.search(text)
    if match is None:
        return text
    end = _END.search(text, match.end())
    if end is None:
        return text
    lead = int(match.group(1))
    nl = newline_of(text)
    before = text[: match.start()]
    if lead and before.endswith(nl * lead):
        before = before[: -len(nl) * lead]
    return before + text[end.end() :]


def add_toml_block(text: str, body: str) -> str:
    """``text`` with the block (``body``: TOML tables, ending in a newline) at the end."""
    text = remove_toml_block(text)
    nl = newline_of(text)
    if text[bom_length(text) :] == "":
        count = 0
    elif not text.endswith("\n"):
        count = 2
    else:
        count = 0 if ends_with_blank_line(text) else 1
    block = with_newline(f"# ipse:begin lead={count}\n{body}# ipse:end\n", nl)
    return f"{text}{nl * count}{block}"


def _first_table(text: str) -> int:
    match = re.search(r"(?m)^[ \t]*\[", text)
    return match.start() if match else len(text)


def add_top_key(text: str, line: str) -> str:
    """``text`` with ``line`` (``key = value``) as a top-level key, after the last top-level
    line that is neither blank nor a comment (at the start when there is none)."""
    text = remove_top_key(text, line)
    nl = newline_of(text)
    bom = bom_length(text)
    head = text[: _first_table(text)]
    position = 0
    for match in re.finditer(r"(?m)^(?:\ufeff)?+[ \t]*[^\s#].*$", head):
        position = match.end()
    mine = line + KEY_MARK
    if position == 0:
        return text[:bom] + mine + nl + text[bom:]
    if position == len(text):  # the last line of the file, without a newline after it
        return text + nl + mine
    return text[: position + 1] + mine + nl + text[position + 1 :]


def remove_top_key(text: str, line: str) -> str:
    """``text`` without the marked ``line``."""
    mine = line + KEY_MARK
    for nl in ("\r\n", "\n"):
        index = text.find(mine + nl)
        if index >= 0 and (index == bom_length(text) or text[index - 1] == "\n"):
            return text[:index] + text[index + len(mine) + len(nl) :]
        if text.endswith(nl + mine):
            return text[: -len(mine) - len(nl)]
    return text


_HEADER = re.compile(r"(?m)^[ \t]*\[(?!\[).*$")
_STRAY = re.compile(r"(?m)^# ipse:(?:begin lead=[0-9]+|end)[ \t]*(?:\r?\n|$)")


def _table_path(line: str) -> tuple[str, ...] | None:
    """The dotted key of a ``[table]`` header line (quoted keys read as TOML does)."""
    import tomllib

    try:
        node: Any = tomllib.loads(line.strip())
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        path.append(key)
    return tuple(path)


def remove_tables(text: str, names: set[tuple[str, ...]]) -> str:
    """``text`` without the tables whose header is one of ``names`` (or below one), each from
    its header to the next header, and without stray ``# ipse:`` marker lines; what the removal
    leaves at the end of the file is trimmed to one newline."""
    headers = [(m.start(), _table_path(m.group(0))) for m in _HEADER.finditer(text)]
    cuts: list[tuple[int, int]] = []
    for index, (start, path) in enumerate(headers):
        if path is not None and any(path[: len(name)] == name for name in names):
            end = headers[index + 1][0] if index + 1 < len(headers) else len(text)
            cuts.append((start, end))
    at_end = bool(cuts) and cuts[-1][1] == len(text)
    for start, end in reversed(cuts):
        text = text[:start] + text[end:]
    cleaned = _STRAY.sub("", text)
    if at_end or cleaned != text:
        stripped = cleaned.rstrip("\r\n")
        cleaned = stripped + newline_of(cleaned) if stripped.strip("\ufeff") else ""
    return cleaned


def has_block(text: str) -> bool:
    """Whether the marked block is in ``text``."""
    return _BEGIN.search(text) is not None


__all__ = [
    "KEY_MARK",
    "add_toml_block",
    "add_top_key",
    "has_block",
    "parse_toml",
    "remove_tables",
    "remove_toml_block",
    "remove_top_key",
]
