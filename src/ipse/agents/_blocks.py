"""Marked blocks in an agent's instructions file (CLAUDE.md, AGENTS.md, GEMINI.md).

A block sits between ``<!-- ipse:NAME:begin ATTRS -->`` and ``<!-- ipse:NAME:end -->``, appended
at the end of the file; installing again replaces only the block, and the rest of the file is
never touched. The begin marker's attributes record what install added around the block
(``lead=N`` newlines before it, ``lead=new`` when install created the file) and what it created
elsewhere (``KEY=new``), so that uninstall removes exactly that. Markers, body and the newlines
before them are written with the file's own newline (`ipse.agents._text`): a CRLF file stays CRLF.
"""

from __future__ import annotations

import re

from ipse.agents._text import ends_with_blank_line, ends_with_break, newline_of, with_newline

_ATTR = r"(?: [a-z_]+=[a-z0-9]+)*"


def _end(name: str) -> str:
    return f"<!-- ipse:{name}:end -->"


def _begin_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- ipse:{re.escape(name)}:begin({_ATTR}) -->\r?\n")


def _attrs(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split())


def _begin(name: str, attrs: dict[str, str], newline: str) -> str:
    inner = "".join(f" {k}={v}" for k, v in attrs.items())
    return f"<!-- ipse:{name}:begin{inner} -->{newline}"


def find_block(text: str, name: str) -> tuple[int, int, dict[str, str]] | None:
    """(start, end, marker attributes) of the marked block, end past its newline."""
    match = _begin_re(name).search(text)
    if match is None:
        return None
    end = text.find(_end(name), match.end())
    if end < 0:
        return None
    end += len(_end(name))
    for newline in ("\r\n", "\n"):
        if text.startswith(newline, end):
            end += len(newline)
            break
    return match.start(), end, _attrs(match.group(1))


def add_block(
    text: str | None,
    body: str,
    name: str,
    extra: dict[str, str] | None = None,
    current: dict[str, str] | None = None,
) -> str:
    """The file's text with the block added or replaced; nothing else changes. On a replace,
    ``extra`` is merged into the attributes already recorded (what an earlier install created
    stays recorded), and ``current`` (what this install configured) replaces theirs."""
    found = find_block(text, name) if text is not None else None
    nl = newline_of(text)
    body = with_newline(body, nl)
    if text is not None and found is not None:
        start, end, attrs = found
        merged = {**attrs, **{k: v for k, v in (extra or {}).items() if k not in attrs}}
        merged.update(current or {})
        return text[:start] + _begin(name, merged, nl) + body + _end(name) + nl + text[end:]
    if text is None or text == "":
        attrs = {"lead": "new" if text is None else "0"}
        count = 0
    else:
        count = 2 if not ends_with_break(text) else (0 if ends_with_blank_line(text) else 1)
        attrs = {"lead": str(count)}
    attrs.update(extra or {})
    attrs.update(current or {})
    return (text or "") + nl * count + _begin(name, attrs, nl) + body + _end(name) + nl


def remove_block(text: str, name: str) -> tuple[str | None, dict[str, str]]:
    """The text without the block and what install added before it (None: delete the file)."""
    found = find_block(text, name)
    if found is None:
        return text, {}
    start, end, attrs = found
    before, after = text[:start], text[end:]
    lead = attrs.get("lead", "0")
    if lead == "new":
        rest = before + after
        return (None if rest == "" else rest), attrs
    count = int(lead) if lead.isdigit() else 0
    nl = newline_of(text)
    if count and before.endswith(nl * count):
        before = before[: -len(nl) * count]
    return before + after, attrs


__all__ = ["add_block", "find_block", "remove_block"]
