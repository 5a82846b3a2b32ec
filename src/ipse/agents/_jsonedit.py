"""Format-preserving edits of JSON text: add or remove one object member or array item.

Agent CLI settings files are edited by people; a tool that rewrites them (re-indents, reorders,
drops the trailing newline) makes every install a diff. Here the text is parsed once into spans
(where each value, key and member starts and ends), and an edit replaces exactly one span:

- a member added to an object with members goes after the last one, on its own line with the
  last member's indentation (or inline after ``, `` when the object is on one line); an item
  added to an array likewise;
- removing the last member (or item) deletes from the end of the one before it, so an add then
  a remove gives the original bytes back; removing the only one leaves ``{}`` (``[]``);
- a value is rendered with the file's indentation unit (the first indented line's, else two
  spaces), nested at the place it goes.

Missing containers on the way (``hooks`` then ``SessionStart``) are created as part of the value
added, and the caller learns which were created so an uninstall can remove exactly those.
What is added is written with the file's own newline (CRLF stays CRLF) after any byte order
mark. Input must be JSON (an object at the top); anything else is an `InputError`. With
``comments=True`` (Gemini CLI's settings, which it reads as JSON with comments) ``//`` and
``/* */`` comments are allowed: they are blanked to spaces for the parse, so every span is the
same in the file, and the edit leaves each comment where it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.agents._text import bom_length, newline_of, with_newline
from ipse.errors import InputError

_WS = " \t\n\r"


@dataclass
class Node:
    """A parsed value's span; objects keep members (key, key start, value), arrays items."""

    kind: str  # object | array | scalar
    start: int
    end: int  # past the last character
    members: list[tuple[str, int, Node]] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        for name, _, value in self.members:
            if name == key:
                return value
        return None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = bom_length(text)

    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in _WS:
            self.i += 1

    def value(self) -> Node:
        self.ws()
        start = self.i
        c = self.text[self.i]
        if c == "{":
            node = Node("object", start, start)
            self.i += 1
            self.ws()
            if self.text[self.i] == "}":
                self.i += 1
            else:
                while True:
                    self.ws()
                    key_start = self.i
                    key = self.string()
                    self.ws()
                    self.i += 1  # ':'
                    node.members.append((key, key_start, self.value()))
                    self.ws()
                    c = self.text[self.i]
                    self.i += 1
                    if c == "}":
                        break
            node.end = self.i
            return node
        if c == "[":
            node = Node("array", start, start)
            self.i += 1
            self.ws()
            if self.text[self.i] == "]":
                self.i += 1
            else:
                while True:
                    node.items.append(self.value())
                    self.ws()
                    c = self.text[self.i]
                    self.i += 1
                    if c == "]":
                        break
            node.end = self.i
            return node
        if c == '"':
            self.string()
        else:
            match = re.compile(r"-?[0-9.eE+\-]+|true|false|null").match(self.text, self.i)
            assert match is not None
            self.i = match.end()
        return Node("scalar", start, self.i)

    def string(self) -> str:
        start = self.i
        self.i += 1
        while self.text[self.i] != '"':
            self.i += 2 if self.text[self.i] == "\\" else 1
        self.i += 1
        key: str = json.loads(self.text[start : self.i])
        return key


def blank_comments(text: str) -> str:
    """``text`` with each ``//`` and ``/* */`` comment outside strings replaced by spaces (line
    breaks kept): the same length, so positions in it are positions in ``text``."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(re.sub(r"[^\r\n]", " ", text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\r\n]", " ", text[i:j]))
            i = j
        else:
            j = i
            while j < n and text[j] not in '"/':
                j += 1
            if j == i:  # a lone '/': not a comment, left for the parser to refuse
                j += 1
            out.append(text[i:j])
            i = j
    return "".join(out)


def parse(text: str, path: str | Path = "", *, comments: bool = False) -> tuple[Any, Node]:
    """The value and its spans; `InputError` unless the text is one JSON object (with
    ``comments``: JSON with comments)."""
    if comments:
        text = blank_comments(text)
    try:
        value = json.loads(text[bom_length(text) :])
        if not isinstance(value, dict):
            raise InputError("not a JSON object", path=path or None)
        return value, _Parser(text).value()
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path or None) from exc
    except RecursionError:  # (both parsers recurse per level: a config nested thousands deep)
        raise InputError("not valid JSON (nested too deeply)", path=path or None) from None


def indent_unit(text: str) -> str:
    """The file's indentation unit: the first indented line's leading whitespace, else 2."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, pos: int) -> str:
    line = text.rfind("\n", 0, pos) + 1
    match = re.match(r"[ \t]*", text[line:pos])
    return match.group(0) if match else ""


def _render(value: Any, unit: str, indent: str, multiline: bool) -> str:
    if not multiline:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    text = json.dumps(value, ensure_ascii=False, indent=len(unit) if unit.strip(" ") == "" else 1)
    if unit.startswith("\t"):
        text = re.sub(r"(?m)^( +)", lambda m: "\t" * len(m.group(1)), text)
    return text.replace("\n", "\n" + indent)


def _is_multiline(text: str, node: Node) -> bool:
    top = node.start == bom_length(text)
    return "\n" in text[node.start : node.end] or (top and "\n" in text)


def _insert(text: str, node: Node, piece: Any, key: str | None) -> str:
    """Add ``piece`` (a member when ``key`` is given, else an item) at the end of ``node``."""
    unit = indent_unit(text)
    children = (
        [(k_start, v) for _, k_start, v in node.members]
        if node.kind == "object"
        else [(v.start, v) for v in node.items]
    )
    label = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
    nl = newline_of(text)
    if children:
        first_start, last = children[0][0], children[-1][1]
        if "\n" in text[node.start : first_start]:
            indent = _line_indent(text, children[-1][0])
            body = label + _render(piece, unit, indent, True)
            added = with_newline(",\n" + indent + body, nl)
            return text[: last.end] + added + text[last.end :]
        body = label + _render(piece, unit, "", False)
        return text[: last.end] + ", " + body + text[last.end :]
    outer = _line_indent(text, node.start)
    bom = bom_length(text)
    multiline = node.start == bom or "\n" in text or not text[bom:].strip().startswith("{")
    kept = text[node.start + 1 : node.end - 1]
    if kept.strip():  # comments in the empty container: they stay, after the new member
        indent = _line_indent(text, node.start) + unit
        body = label + _render(piece, unit, indent, True)
        inner = with_newline("\n" + indent + body, nl) + kept
    elif multiline:
        indent = outer + unit
        body = label + _render(piece, unit, indent, True)
        inner = with_newline("\n" + indent + body + "\n" + outer, nl)
    else:
        inner = label + _render(piece, unit, "", False)
    return text[: node.start + 1] + inner + text[node.end - 1 :]


def _remove_at(text: str, node: Node, index: int) -> str:
    spans = (
        [(k_start, v.end) for _, k_start, v in node.members]
        if node.kind == "object"
        else [(v.start, v.end) for v in node.items]
    )
    if len(spans) == 1:
        if text[spans[0][1] : node.end - 1].strip():  # comments after it: they stay
            return text[: node.start + 1] + text[spans[0][1] :]
        return text[: node.start + 1] + text[node.end - 1 :]
    if index > 0:
        return text[: spans[index - 1][1]] + text[spans[index][1] :]
    return text[: spans[0][0]] + text[spans[1][0] :]


def _walk(root: Node, path: Sequence[str]) -> tuple[Node, list[str]]:
    """The deepest existing object along ``path`` and the keys still missing below it."""
    node = root
    for depth, key in enumerate(path):
        child = node.get(key)
        if child is None:
            return node, list(path[depth:])
        if child.kind != "object":
            raise InputError(f"`{'.'.join(path[: depth + 1])}` is not an object")
        node = child
    return node, []


def set_member(
    text: str, path: Sequence[str], key: str, value: Any, *, comments: bool = False
) -> tuple[str, list[str]]:
    """``text`` with ``path.key`` set to ``value``; also the containers of ``path`` created.

    An existing member is replaced (its value span only)."""
    _, root = parse(text, comments=comments)
    node, missing = _walk(root, path)
    if not missing:
        current = node.get(key)
        if current is not None:
            unit = indent_unit(text)
            indent = _line_indent(text, current.start)
            multiline = _is_multiline(text, node)
            rendered = with_newline(_render(value, unit, indent, multiline), newline_of(text))
            return text[: current.start] + rendered + text[current.end :], []
    if not missing:
        return _insert(text, node, value, key), []
    piece: Any = value
    for name in reversed([*missing[1:], key]):
        piece = {name: piece}
    new = _insert(text, node, piece, missing[0])
    created = [".".join(path[: len(path) - len(missing) + i + 1]) for i in range(len(missing))]
    return new, created


def remove_member(
    text: str,
    path: Sequence[str],
    key: str,
    created: Sequence[str] = (),
    *,
    comments: bool = False,
) -> str:
    """``text`` without ``path.key``; then each container in ``created`` left empty goes too."""
    _, root = parse(text, comments=comments)
    node, missing = _walk(root, path)
    if missing:
        return text
    for index, (name, _, _) in enumerate(node.members):
        if name == key:
            text = _remove_at(text, node, index)
            break
    else:
        return text
    return prune(text, path, created, comments=comments)


def prune(text: str, path: Sequence[str], created: Sequence[str], *, comments: bool = False) -> str:
    """Remove the containers along ``path`` that are empty and listed in ``created``."""
    for depth in range(len(path), 0, -1):
        dotted = ".".join(path[:depth])
        if dotted not in created:
            continue
        _, root = parse(text, comments=comments)
        parent, missing = _walk(root, path[: depth - 1])
        child = parent.get(path[depth - 1]) if not missing else None
        if child is None or child.members or child.items:
            break
        index = [n for n, _, _ in parent.members].index(path[depth - 1])
        text = _remove_at(text, parent, index)
    return text


def append_item(
    text: str, path: Sequence[str], item: Any, *, comments: bool = False
) -> tuple[str, list[str]]:
    """``text`` with ``item`` appended to the array at ``path`` (created when missing)."""
    _, root = parse(text, comments=comments)
    parent, missing = _walk(root, path[:-1])
    if missing:
        new, created = set_member(text, path[:-1], path[-1], [item], comments=comments)
        return new, [*created, ".".join(path)]
    array = parent.get(path[-1])
    if array is None:
        new, _ = set_member(text, path[:-1], path[-1], [item], comments=comments)
        return new, [".".join(path)]
    if array.kind != "array":
        raise InputError(f"`{'.'.join(path)}` is not a list")
    return _insert(text, array, item, None), []


def remove_items(text: str, path: Sequence[str], item: Any, *, comments: bool = False) -> str:
    """``text`` without every item of the array at ``path`` equal to ``item``."""
    while True:
        value, root = parse(text, comments=comments)
        parent, missing = _walk(root, path[:-1])
        array = parent.get(path[-1]) if not missing else None
        if array is None or array.kind != "array":
            return text
        current = value
        for key in path:
            current = current[key]
        if item not in current:
            return text
        text = _remove_at(text, array, current.index(item))


__all__ = [
    "Node",
    "append_item",
    "blank_comments",
    "indent_unit",
    "parse",
    "prune",
    "remove_items",
    "remove_member",
    "set_member",
]
