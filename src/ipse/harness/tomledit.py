"""Format-preserving edits of a TOML file (Codex's ``config.toml``): one marked block of tables
at the end, and one marked top-level key.

The standard library's parser (``tomllib``) reads the file (to refuse invalid TOML, and keys ipse
would clash with) and checks the result; the edit itself is textual, so removing it gives the
original bytes back (a format-preserving TOML library, tomlkit, was tried: its deletions leave
blank lines behind, so uninstall could not give the file back byte for byte). The tables go
between ``# ipse:begin lead=N`` and ``# ipse:end`` lines (``N`` newlines install added before
them); a top-level key goes on one line ending in ``# ipse``, after the last top-level line
before the first table.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ipse.errors import InputError

_BEGIN = re.compile(r"(?m)^# ipse:begin lead=([0-9]+)\n")
_END = "# ipse:end\n"
KEY_MARK = "  # ipse"


def parse_toml(text: str, path: str | Path = "") -> dict[str, Any]:
    """The parsed document; `InputError` for invalid TOML."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path or None) from exc


def remove_toml_block(text: str) -> str:
    """``text`` without the marked block and the newlines install put before it."""
    match = _BEGIN.search(text)
    if match is None:
        return text
    end = text.find(_END, match.end())
    if end < 0:
        return text
    lead = int(match.group(1))
    before = text[: match.start()]
    if lead and before.endswith("\n" * lead):
        before = before[:-lead]
    elif lead and not before.endswith("\n"):
        pass
    return before + text[end + len(_END) :]


def add_toml_block(text: str, body: str) -> str:
    """``text`` with the block (``body``: TOML tables, ending in a newline) at the end."""
    text = remove_toml_block(text)
    if text == "":
        lead = ""
    elif not text.endswith("\n"):
        lead = "\n\n"
    else:
        lead = "" if text.endswith("\n\n") else "\n"
    return f"{text}{lead}# ipse:begin lead={len(lead)}\n{body}{_END}"


def _first_table(text: str) -> int:
    match = re.search(r"(?m)^[ \t]*\[", text)
    return match.start() if match else len(text)


def add_top_key(text: str, line: str) -> str:
    """``text`` with ``line`` (``key = value``) as a top-level key, after the last top-level
    line that is neither blank nor a comment (at the start when there is none)."""
    text = remove_top_key(text, line)
    head = text[: _first_table(text)]
    position = 0
    for match in re.finditer(r"(?m)^[ \t]*[^\s#].*$", head):
        position = match.end()
    mine = line + KEY_MARK
    if position == 0:
        return mine + "\n" + text
    if position == len(text):  # the last line of the file, without a newline after it
        return text + "\n" + mine
    return text[: position + 1] + mine + "\n" + text[position + 1 :]


def remove_top_key(text: str, line: str) -> str:
    """``text`` without the marked ``line``."""
    mine = line + KEY_MARK
    index = text.find(mine + "\n")
    if index >= 0 and (index == 0 or text[index - 1] == "\n"):
        return text[:index] + text[index + len(mine) + 1 :]
    if text.endswith("\n" + mine):
        return text[: -len(mine) - 1]
    return text


def has_block(text: str) -> bool:
    """Whether the marked block is in ``text``."""
    return _BEGIN.search(text) is not None


__all__ = [
    "KEY_MARK",
    "add_toml_block",
    "add_top_key",
    "has_block",
    "parse_toml",
    "remove_toml_block",
    "remove_top_key",
]
