"""What a tool call did to the working tree, read from its input alone, for every harness.

A handoff removes tool calls; this module says what they did, so the handoff's ledger can name
it, and `ipse probe` reads the same knowledge (through `ipse.handoff.effects`) to find the facts
a session used. Recognised by shape, not by harness:

- changes: an input with a file path and an edit-like or write-like tool name (Claude Code's
  Edit/Write/MultiEdit/NotebookEdit, Cline's write_to_file and replace_in_file, Gemini CLI's
  write_file and replace, ...); a ``str_replace_editor`` call (SWE-agent, OpenHands), as a
  structured input or as a command line; an ``apply_patch`` envelope (Codex: ``*** Add File:``,
  ``*** Update File:``, ``*** Delete File:``, ``*** Move to:``) in any string of any input; and
  shell commands: ``rm``, ``mv``, ``touch``, SWE-agent's ``create``, an output redirection to a
  plain file name (``> out.txt``; never ``/dev/null``, a descriptor or a name built from
  variables or globs), ``git commit -m``, and ``git checkout -b`` / ``switch -c`` /
  ``branch NAME`` (`artifacts`);
- reads: a read-like tool with a path (Read, read_file, view_file, an editor's ``view``),
  and a shell command that only shows files (``cat``, ``head``, ``tail``, ``nl``, ``sed -n``,
  SWE-agent's ``open``) (`read_paths`);
- commands: the shell command of a call (a ``command``/``cmd`` string or argv, SWE-agent's
  text ``action``; `command_of`), its first meaningful line (`first_line`) and the directory it
  ran in when the call names one (`workdir_of`).

Every value is returned exactly as it appears in the input. `exit_status` reads a result's exit
status where the result says it (a flag, ``Exit code: N``, ``Process exited with code N``,
``<returncode>N</returncode>``, JSON metadata). A command line is parsed only in its first
`PARSED_CHARS` characters: a longer one is a program, not a command, and splitting it into
words would take longer than the handoff.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ipse.transcript import ToolCall, ToolResult

PARSED_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class Artifact:
    """One change: ``action`` is created, edited, deleted, moved, committed or branched."""

    action: str
    value: str


PATH_KEYS = (
    "file_path",
    "path",
    "absolute_path",
    "notebook_path",
    "filename",
    "file",
    "target_file",
)
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_WORKDIR_KEYS = ("workdir", "cwd", "directory", "dir_path")
_EDITORS = ("str_replace_editor", "file_editor")
_WRITE = re.compile(r"write|create|new_file|save", re.IGNORECASE)
_EDIT = re.compile(r"edit|replace|patch|insert|modify|update", re.IGNORECASE)
_DELETE = re.compile(r"delete|remove|unlink", re.IGNORECASE)
_MOVE = re.compile(r"move|rename", re.IGNORECASE)
_NOT_A_CHANGE = re.compile(r"read|view|list|glob|grep|search|find|fetch", re.IGNORECASE)
_READS = re.compile(r"read|view|cat|open", re.IGNORECASE)
_PATCH_HEADER = re.compile(
    r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE
)
_PATCH_ACTION = {"Add": "created", "Update": "edited", "Delete": "deleted"}
_EDITOR_ACTION = {"create": "created", "str_replace": "edited", "insert": "edited"}
_EDITOR_LINE = re.compile(r"(?:^|[\s;&|])str_replace_editor\s+(create|str_replace|insert)\s+(\S+)")
_REDIRECT_TARGET = re.compile(r"[A-Za-z0-9_./-]+")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)\1[^\n]*\n(.*?)\n[ \t]*\2\b", re.DOTALL)
_SHOW = frozenset({"cat", "head", "tail", "nl", "less", "more", "open", "bat"})
_PLAIN_NAME = re.compile(r"[\w@+%,:.~/-]+")


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value, depth first, keys excluded (without recursion: a
    tool's input may nest deeper than the interpreter's stack)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))


def _base(name: str) -> str:
    """A tool's own name, without an MCP server's ``mcp__<server>__`` before it."""
    return name.rsplit("__", 1)[-1]


def _path(data: Mapping[str, Any]) -> str | None:
    return next((data[k] for k in PATH_KEYS if isinstance(data.get(k), str) and data[k]), None)


def artifacts(call: ToolCall) -> Iterator[Artifact]:
    """The changes one tool call made, as far as its input says."""
    data = call.input if isinstance(call.input, Mapping) else {}
    path = _path(data)
    name = _base(call.name)
    if name in _EDITORS:  # its verb says; without one (OpenHands' file read) it changes nothing
        action = _EDITOR_ACTION.get(str(data.get("command")))
        if action and path:
            yield Artifact(action, path)
    elif path and not _NOT_A_CHANGE.search(name):
        yield from _tool_change(name, path, data)
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


def _tool_change(name: str, path: str, data: Mapping[str, Any]) -> Iterator[Artifact]:
    action = _tool_action(name)
    if not action:
        return
    yield Artifact(action, path)
    target = next(
        (data[k] for k in ("new_path", "destination", "to") if isinstance(data.get(k), str)),
        None,
    )
    if action == "moved" and target:
        yield Artifact("moved", target)


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
                if _base(call.name) in _EDITORS:
                    return None  # its "command" is the editor's verb
                return value
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                if len(value) >= 3 and value[1] in ("-lc", "-c"):
                    return str(value[2])
                return shlex.join(value)
        action = data.get("action")
        if isinstance(action, str) and action.split(maxsplit=1)[:1] == [call.name]:
            return action  # SWE-agent's text action: the tool is named by its first word
    if isinstance(data, str) and re.search(r"bash|shell|exec|command|terminal", call.name, re.I):
        return data
    return None


def first_line(command: str, width: int = 120) -> str:
    """A command's first meaningful line (not blank, not a comment), clipped to ``width``; an
    ellipsis says when the command goes on."""
    lines = [line.strip() for line in command.splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith("#")] or lines
    line = meaningful[0] if meaningful else ""
    more = len(meaningful) > 1
    if len(line) > width:
        line, more = line[: width - 1].rstrip(), True
    return line + " ..." if more else line


def workdir_of(call: ToolCall) -> str | None:
    """The directory a call names to run in: a ``workdir``/``cwd``/``directory`` argument, or
    an absolute ``cd DIR`` that opens its command line."""
    data = call.input if isinstance(call.input, Mapping) else {}
    for key in _WORKDIR_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.startswith(("/", "~")):
            return value
    command = command_of(call)
    if command:
        words = _words(command.lstrip()[:PARSED_CHARS].split("\n", 1)[0])
        if len(words) >= 2 and words[0] == "cd" and words[1].startswith(("/", "~")):
            return words[1]
    return None


def read_path(call: ToolCall) -> str | None:
    """The file a read-like tool reads (Read, read_file, an editor's ``view``); None for other
    calls (a shell command's reads are `shell_reads`)."""
    data = call.input if isinstance(call.input, Mapping) else {}
    path = _path(data)
    if not path:
        return None
    name = _base(call.name)
    verb = data.get("command")
    if name in _EDITORS:
        return path if verb in (None, "view") else None
    return path if _READS.search(name) else None


def read_paths(call: ToolCall) -> list[str]:
    """Every file a call reads: a read-like tool's path, or the files of a command line made
    only of commands that show files."""
    path = read_path(call)
    if path is not None:
        return [path]
    command = command_of(call)
    return shell_reads(command) if command else []


# A shell command line as words, the way ``shlex`` (POSIX, with ``;&|<>`` as punctuation) splits
# it, at a tenth of its cost: a run of punctuation is a word of its own; quotes join what they
# hold; a backslash escapes the next character (in double quotes only ``$`"\`` and a newline);
# ``#`` at the start of a word comments out the rest of its line.
_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<punct>[;&|<>]+)|(?P<comment>\#[^\n]*)"""
    r"""|(?P<word>(?:[^\s;&|<>'"\\]+|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+)""",
    re.DOTALL,
)
_PART = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^'"\\]+)""", re.DOTALL)
_QUOTED_ESCAPE = re.compile(r"""\\([$`"\\\n])""")


@functools.lru_cache(maxsize=256)
def _words(command: str) -> tuple[str, ...]:
    """``command`` split into words (an unclosed quote: split at whitespace)."""
    words: list[str] = []
    at = 0
    while at < len(command):
        match = _TOKEN.match(command, at)
        if match is None:  # an unclosed quote, or a lone backslash at the end
            return tuple(command.split())
        at = match.end()
        kind = match.lastgroup
        if kind == "punct":
            words.append(match.group())
        elif kind == "word":
            words.append(_PART.sub(_unquoted, match.group()))
    return tuple(words)


def _unquoted(part: re.Match[str]) -> str:
    single, double, escaped, plain = part.groups()
    if single is not None:
        return single
    if double is not None:
        return _QUOTED_ESCAPE.sub(r"\1", double)
    if escaped is not None:
        return "" if escaped == "\n" else escaped
    return plain


def _simple_commands(command: str) -> Iterator[list[str]]:
    """The words of each simple command of a command line (up to a heredoc)."""
    words = list(_words(command[:PARSED_CHARS].split("<<", 1)[0]))
    start = 0
    for end in [*[i for i, w in enumerate(words) if w in _SEPARATORS], len(words)]:
        yield words[start:end]
        start = end + 1


def shell_reads(command: str) -> list[str]:
    """The files a command line shows, when every simple command of it only shows files
    (``cat a.py``, ``sed -n 1,40p b.py | nl``); else none: the command is what it did."""
    if len(command) > PARSED_CHARS or "\n" in command.strip() or re.search(r"[<>]", command):
        return []
    found: list[str] = []
    for words in _simple_commands(command):
        if not words or words[0] not in (*_SHOW, "sed", "wc", "grep"):
            return []
        if words[0] == "sed" and "-n" not in words:
            return []
        if words[0] in ("wc", "grep"):
            continue  # (a filter of what the others show)
        found.extend(w for w in words[1:] if _plain_file(w))
    return found


def _plain_file(word: str) -> bool:
    """A word that names a file: no option, no glob or variable, not a sed script."""
    return (
        not word.startswith("-")
        and bool(_PLAIN_NAME.fullmatch(word))
        and not re.fullmatch(r"[\d,$]+p?", word)
    )


def shell_artifacts(command: str) -> Iterator[Artifact]:
    """The files and commits one shell command line makes, where the line says so plainly:
    a redirection outside quotes to a plain file name, ``rm``, ``touch``, ``mv``, git."""
    for words in _simple_commands(command):
        for i, word in enumerate(words[:-1]):
            target = words[i + 1]
            if word in (">", ">>") and _file_target(target):
                yield Artifact("created", target)
        for artifact in _simple(_without_redirections(words)):
            if artifact.action == "committed" and artifact.value.lstrip('"').startswith("$("):
                message = _heredoc_line(command)
                if message:
                    yield Artifact("committed", message)
                continue
            yield artifact


def _file_target(word: str) -> bool:
    """A redirection's target that is a plain file name (no device, variable or glob)."""
    return bool(_REDIRECT_TARGET.fullmatch(word)) and not (
        word.startswith("/dev/") or word in (".", "..")
    )


def _without_redirections(words: list[str]) -> list[str]:
    """A simple command's words less its redirections (``> f``, ``2>&1``, ``< in``)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word and set(word) <= set("<>&"):
            skip = True
            continue
        following = words[i + 1] if i + 1 < len(words) else ""
        if word.isdigit() and following and set(following) <= set("<>&"):
            continue  # the descriptor of a redirection (2 in 2>&1)
        out.append(word)
    return out


def _heredoc_line(command: str) -> str | None:
    """The first line of a command's heredoc (a commit message written with ``$(cat <<EOF``)."""
    found = _HEREDOC.search(command[:PARSED_CHARS])
    if found is None:
        return None
    return next((line.strip() for line in found.group(3).splitlines() if line.strip()), None)


def _simple(words: list[str]) -> Iterator[Artifact]:
    if not words:
        return
    head, args = words[0], [w for w in words[1:] if not w.startswith("-")]
    if head == "rm":
        yield from (Artifact("deleted", a) for a in args)
    elif head in ("touch", "create"):
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
    r"(?:exit[ _]?code|exit status|returncode|return code|exited with code)[\"'>:= ]*(-?\d+)",
    re.IGNORECASE,
)


def exit_status(result: ToolResult) -> int | None:
    """The exit status a result states, or None when it says nothing."""
    raw = result.raw or {}
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(meta.get("exit_code"), int):
        return int(meta["exit_code"])
    text = result.text
    match = _EXIT.search(text[:2000]) or _EXIT.search(text[-500:])
    if match:
        return int(match.group(1))
    return 1 if result.is_error else None


__all__ = [
    "PARSED_CHARS",
    "PATH_KEYS",
    "Artifact",
    "artifacts",
    "command_of",
    "exit_status",
    "first_line",
    "read_path",
    "read_paths",
    "shell_artifacts",
    "shell_reads",
    "strings",
    "workdir_of",
]
