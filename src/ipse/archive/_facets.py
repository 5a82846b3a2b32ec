"""What an archived call did, read from its tool name and input: an action and the paths it named.

The action is one of `ACTIONS`: ``edit`` (a file written, replaced, patched, created, deleted or
moved: Claude Code's Edit/Write/MultiEdit/NotebookEdit, Cline's write_to_file, Gemini CLI's
write_file and replace, ``str_replace_editor`` create/str_replace/insert, a Codex
``apply_patch`` envelope in any string of the input), ``command`` (a shell command: a
``command``/``cmd``/``script`` string or argv list, or a string given to a tool named like a
shell), ``read`` (a tool named like read, view, list, glob, grep, search, find or fetch;
``str_replace_editor view``), else ``other`` (thinking, checkpoints, anything else).

The paths are the values of the input's path fields, the files an ``apply_patch`` envelope
names, and the words of a shell command that look like files (a ``/`` or an extension; no
options, URLs, variables or globs), each as written. Recognised by shape, never by an agent
CLI's name.

The archive reads these itself because it sits below the handoff, which reads tool calls for
its ledger: a removed item that carries ``action`` and ``paths`` of its own is indexed by those
instead (`ipse.archive._index.given_facets`), so one reading can serve both.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from ipse.archive._text import strings

READ, EDIT, COMMAND, OTHER = "read", "edit", "command", "other"
ACTIONS = (READ, EDIT, COMMAND, OTHER)

MAX_PATHS = 64
MAX_PATH = 1024
_COMMAND_CHARS = 4000  # of a command line, read for paths

_PATH_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filename",
    "file",
    "target_file",
    "absolute_path",
    "dir_path",
    "directory",
    "new_path",
    "destination",
    "paths",
)
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_EDITING = re.compile(
    r"edit|write|replace|patch|create|new_file|save|delete|remove|unlink|move|rename|insert",
    re.IGNORECASE,
)
_READING = re.compile(
    r"read|view|list|glob|grep|search|find|fetch|(?<![a-z])(?:ls|cat)(?![a-z])", re.IGNORECASE
)
_SHELL_NAME = re.compile(r"bash|shell|exec|command|terminal", re.IGNORECASE)
_PATCH = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE
)
_EDITOR_VERBS = {"create": EDIT, "str_replace": EDIT, "insert": EDIT, "undo_edit": EDIT}
_FILE_WORD = re.compile(r"^[^\s$*?{}()<>|;&`'\"=]+$")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")


def facets(kind: str, tool: str, call: Mapping[str, Any] | None) -> tuple[str, tuple[str, ...]]:
    """(action, paths) of an archived item of ``kind`` calling ``tool`` with ``call``."""
    if kind not in ("tool", "server_tool") or not call:
        return OTHER, ()
    data = _argument(call)
    name = tool.rsplit("__", 1)[-1]
    found: dict[str, None] = {}
    mapping = data if isinstance(data, Mapping) else {}
    for key in _PATH_KEYS:
        _add(found, mapping.get(key))
    patched = False
    for text in strings(data):
        for match in _PATCH.finditer(text):
            patched = True
            _add(found, match.group(1) or match.group(2))
    command = _command(mapping, data, name)
    if command is not None:
        for word in _file_words(command):
            _add(found, word)
    return _action(name, mapping, patched, command, bool(found)), tuple(found)[:MAX_PATHS]


def _action(
    name: str, data: Mapping[str, Any], patched: bool, command: str | None, has_path: bool
) -> str:
    if name == "str_replace_editor":
        return _EDITOR_VERBS.get(str(data.get("command")), READ)
    if patched or (has_path and _EDITING.search(name)):
        return EDIT
    if command is not None:
        return COMMAND
    if _READING.search(name):
        return READ
    return OTHER


def _argument(call: Mapping[str, Any]) -> Any:
    value: Any = call.get("input", call.get("arguments"))
    function = call.get("function")
    if value is None and isinstance(function, Mapping):
        value = function.get("arguments")
    if isinstance(value, str) and value.lstrip().startswith("{"):
        from ipse import jsonio

        try:
            return jsonio.loads(value)
        except ValueError:
            return value
    return value


def _add(found: dict[str, None], value: Any) -> None:
    values = value if isinstance(value, list) else [value]
    for item in values:
        if isinstance(item, str) and item.strip() and len(item) <= MAX_PATH and "\n" not in item:
            found.setdefault(item.strip(), None)


def _command(data: Mapping[str, Any], raw: Any, name: str) -> str | None:
    """The shell command a call runs, when it is one."""
    if name == "str_replace_editor":
        return None  # its "command" is the editor's verb
    for key in _COMMAND_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[1] in ("-lc", "-c"):
                return str(value[2])
            return shlex.join(value)
    if isinstance(raw, str) and _SHELL_NAME.search(name):
        return raw
    return None


def _file_words(command: str) -> Iterator[str]:
    """The words of a command line that look like files."""
    line = command[:_COMMAND_CHARS].split("<<", 1)[0]
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        parts = list(lexer)
    except ValueError:
        parts = line.split()
    for word in parts:
        if word.startswith("-") or "://" in word or not _FILE_WORD.match(word):
            continue
        if "/" in word.strip("/") or _EXTENSION.search(word):
            yield word


def match_column(paths: tuple[str, ...]) -> str:
    """The paths as the index's match column holds them: each as ``/path/`` on its own line,
    backslashes as slashes, so a query's path is found by one substring test (`path_needle`)."""
    return "".join(f"\n/{_plain(p)}/" for p in paths) + ("\n" if paths else "")


def path_needle(path: str) -> str:
    """What a query's path is looked for as in `match_column`: ``/a/b/`` for ``a/b``, ``./a/b``,
    ``/a/b/`` alike: the path names the file or a folder above it, anywhere in a stored path."""
    return f"/{_plain(path)}/"


def _plain(path: str) -> str:
    plain = path.replace("\\", "/").strip()
    while plain.startswith("./"):
        plain = plain[2:]
    return plain.strip("/")


__all__ = [
    "ACTIONS",
    "COMMAND",
    "EDIT",
    "OTHER",
    "READ",
    "facets",
    "match_column",
    "path_needle",
]
