"""Line endings and the byte order mark of the agent CLI files ipse edits.

People edit these files on Windows too: a file with CRLF line endings (or a UTF-8 BOM) must keep
them, both in what install adds and in what uninstall leaves, so that a file edited by nothing
else comes back byte for byte. Every edit here writes its new lines with the file's own newline:
the ending of the file's first line (LF when it has none), which what install appends at the end
never changes, so uninstall finds the same newline install used.
"""

from __future__ import annotations

BOM = "\ufeff"


def newline_of(text: str | None) -> str:
    """The newline the file uses: its first line's ending, LF when it has no line break."""
    index = (text or "").find("\n")
    return "\r\n" if index > 0 and text is not None and text[index - 1] == "\r" else "\n"


def with_newline(piece: str, newline: str) -> str:
    """``piece`` (written with LF) with ``newline`` at each line break."""
    return piece if newline == "\n" else piece.replace("\n", newline)


def ends_with_break(text: str) -> bool:
    """Whether the text's last line is terminated (by LF or CRLF)."""
    return text.endswith("\n")


def ends_with_blank_line(text: str) -> bool:
    """Whether the text ends in an empty line (two line breaks in a row, of either kind)."""
    return text.endswith("\n\n") or text.endswith("\n\r\n")


def bom_length(text: str) -> int:
    """1 when the text starts with a byte order mark, else 0."""
    return 1 if text.startswith(BOM) else 0


__all__ = [
    "BOM",
    "bom_length",
    "ends_with_blank_line",
    "ends_with_break",
    "newline_of",
    "with_newline",
]
