"""What a tool call did to the working tree, read from its input alone, for every harness.

Recognised by shape, not by harness: an input with a file path and an edit-like or write-like
tool name (Claude Code's Edit/Write/MultiEdit/NotebookEdit, Cline's write_to_file and
replace_in_file, Gemini CLI's write_file and replace, ...); a ``str_replace_editor`` call
(SWE-agent, OpenHands), as a structured input or as a command line; an ``apply_patch`` envelope
(Codex: ``*** Add File:``, ``*** Update File:``, ``*** Delete File:``, ``*** Move to:``) in any
string of any input; and shell commands: ``rm``, ``mv``, ``touch``, ``mkdir``, an output
redirection to a plain file name (``> out.txt``; never ``/dev/null``, a descriptor or a name
built from variables or globs), ``git commit -m``, and ``git checkout -b`` / ``switch -c`` /
``branch NAME``. Every value is returned exactly as it appears in the input.

`command_of` finds the shell command of a call; `exit_status` reads a result's exit status where
the result says it (a flag, ``Exit code: N``, ``<returncode>N</returncode>``, JSON metadata).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ipse.probe._timeline import strings
from ipse.transcript import ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class Artifact:
    """One change: ``action`` is created, edited, deleted, moved, committed or branched."""

    action: str
    value: str


_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file")
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_WRITE = re.compile(r"write|create|new_file|save", re.IGNORECASE)
_EDIT = re.compile(r"edit|replace|patch|insert|modify|update", re.IGNORECASE)
_DELETE = re.compile(r"delete|remove|unlink", re.IGNORECASE)
_MOVE = re.compile(r"move|rename", re.IGNORECASE)
_PATCH_HEADER = re.compile(
    r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE
)
_PATCH_ACTION = {"Add": "created", "Update": "edited", "Delete": "deleted"}
_EDITOR_ACTION = {"create": "created", "str_replace": "edited", "insert": "edited"}
_EDITOR_LINE = re.compile(r"(?:^|[\s;&|])str_replace_editor\s+(create|str_replace|insert)\s+(\S+)")
_REDIRECT = re.compile(r"(?<![0-9&<>])>>?\s*([A-Za-z0-9_./-]+)")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})


def artifacts(call: ToolCall) -> Iterator[Artifact]:
    """The changes one tool call made, as far as its input says."""
    data = call.input if isinstance(call.input, Mapping) else {}
    path = next((data[k] for k in _PATH_KEYS if isinstance(data.get(k), str) and data[k]), None)
    name = call.name.rsplit("__", 1)[-1]
    if name == "str_replace_editor" and isinstance(data.get("command"), str):
        action = _EDITOR_ACTION.get(data["command"])
        if action and path:
            yield Artifact(action, path)
    elif path and not _is_read(name):
        action = _tool_action(name)
        if action:
            yield Artifact(action, path)
            target = next(
                (
                    data[k]
                    for k in ("new_path", "destination", "to")
                    if isinstance(data.get(k), str)
                ),
                None,
            )
            if action == "moved" and target:
                yield Artifact("moved", target)
    for text in strings(call.input if call.input is not None else call.arguments):
        for match in _PATCH_HEADER.finditer(text):
            if match.group(3):
                yield Artifact("moved", match.group(3))
            else:
                yield Artifact(_PATCH_ACTION[match.group(1)], match.group(2))
        for match in _EDITOR_LINE.finditer(text):
            yield Artifact(_EDITOR_ACTION[match.group(1)], match.group(2))
    command = command_of(call)
    if command:
        yield from shell_artifacts(command)


def _is_read(name: str) -> bool:
    return bool(re.search(r"read|view|list|glob|grep|search|find|fetch", name, re.IGNORECASE))


def _tool_action(name: str) -> str | None:
    if _DELETE.search(name):
        return "deleted"
    if _MOVE.search(name):
        return "moved"
    if _EDIT.search(name):
        return "edited"
    if _WRITE.search(name):
        return "created"
    return None


def command_of(call: ToolCall) -> str | None:
    """The shell command a call runs, when it is one (a ``command`` string or argv list)."""
    data = call.input
    if isinstance(data, Mapping):
        for key in _COMMAND_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                if call.name.rsplit("__", 1)[-1] == "str_replace_editor":
                    return None  # its "command" is the editor's verb
                return value
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                if len(value) >= 3 and value[1] in ("-lc", "-c"):
                    return str(value[2])
                return shlex.join(value)
    if isinstance(data, str) and re.search(r"bash|shell|exec|command|terminal", call.name, re.I):
        return data
    return None


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def shell_artifacts(command: str) -> Iterator[Artifact]:
    """The files and commits one shell command line makes, where the line says so plainly."""
    if "<<" not in command:
        for match in _REDIRECT.finditer(command):
            target = match.group(1)
            if target and not target.startswith("/dev/") and target not in (".", ".."):
                yield Artifact("created", target)
    words = _words(command.split("<<", 1)[0])
    start = 0
    for end in [*[i for i, w in enumerate(words) if w in _SEPARATORS], len(words)]:
        yield from _simple(words[start:end])
        start = end + 1


def _simple(words: list[str]) -> Iterator[Artifact]:
    if not words:
        return
    head, args = words[0], [w for w in words[1:] if not w.startswith("-")]
    if head == "rm":
        yield from (Artifact("deleted", a) for a in args)
    elif head == "touch":
        yield from (Artifact("created", a) for a in args)
    elif head == "mv" and len(args) == 2:
        yield Artifact("moved", args[0])
        yield Artifact("moved", args[1])
    elif head == "git" and len(words) > 1:
        yield from _git(words[1:])


def _git(words: list[str]) -> Iterator[Artifact]:
    verb, rest = words[0], words[1:]
    if verb == "commit":
        for i, word in enumerate(rest):
            if word in ("-m", "--message") and i + 1 < len(rest):
                yield Artifact("committed", rest[i + 1])
            elif word.startswith("--message="):
                yield Artifact("committed", word.split("=", 1)[1])
    elif verb in ("checkout", "switch") and len(rest) >= 2 and rest[0] in ("-b", "-B", "-c", "-C"):
        yield Artifact("branched", rest[1])
    elif verb == "branch" and rest and not rest[0].startswith("-"):
        yield Artifact("branched", rest[0])


_EXIT = re.compile(
    r"(?:exit[ _]?code|exit status|returncode|return code)[\"'>:= ]*(-?\d+)", re.IGNORECASE
)


def exit_status(result: ToolResult) -> int | None:
    """The exit status a result states, or None when it says nothing."""
    raw = result.raw or {}
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(meta.get("exit_code"), int):
        return int(meta["exit_code"])
    match = _EXIT.search(result.text[:2000]) or _EXIT.search(result.text[-500:])
    if match:
        return int(match.group(1))
    return 1 if result.is_error else None


__all__ = ["Artifact", "artifacts", "command_of", "exit_status", "shell_artifacts"]
