"""The ledger: the grit of the tool traffic a handoff removes, derived without a model.

Narrative regenerates and grit does not: which directory, which files were changed and read,
which commands ran and how they ended, what was last seen failing. `derive` reads it from the
removed calls and their results (`ipse.handoff._effects` says what each call did), newest first,
one entry per file or command (the newest call wins, and its id is the one `recall` takes to
give the call and its result back); `Ledger.text` renders it under a token cap, sections in the
order the next step needs them (failing, changed, commands, read), the newest entries of each
first, and says how many older ones it left out. Every id it shows is one `recall` takes: the
shortest start of the call's id (twelve characters or more) that no other call of the
conversation shares, which costs a third of the tokens of a whole ``toolu_`` id; calls that gave
no entry are counted per tool with their ids too, newest first, as many as the cap holds, so
what they returned (a search's hits, a sub-agent's report) can be asked for by id. A pure
function of the removed part: the
same conversation and cut give the same bytes, which is what keeps a proxy's rewritten prefix
cacheable.

"Last seen failing": a command whose newest run failed (a non-zero exit status, or an error
result), with the failing tests and the last error line its output shows; a failed edit
unless a newer call changed the same file. A later successful run of the same command line
clears it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ipse.handoff._effects import (
    PATH_KEYS,
    artifacts,
    command_of,
    exit_status,
    first_line,
    read_paths,
    shell_artifacts,
    strings,
    workdir_of,
)
from ipse.transcript import Message, Text, ToolCall, ToolResult

DEFAULT_LEDGER_TOKENS = 1000
HEADING = "Ledger of the removed tool calls"
SECTIONS = ("failing", "changed", "commands", "read")
_TITLES = {"failing": "Failing", "changed": "Changed", "commands": "Commands", "read": "Read"}
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SCANNED = 20_000  # characters of a result read for failures: its head and its tail
_TEST = re.compile(
    r"^(?:FAILED|ERROR) (\S+::\S+)|^--- FAIL: (\S+)|^test (\S+) \.\.\. FAILED"
    r"|^(?:FAIL|ERROR): (\w+ \([\w.]+\))",
    re.MULTILINE,
)
_ERROR = re.compile(
    r"^[ \t]*(?:E[ \t]+)?(?:[\w.]*(?:Error|Exception)\b.*|error(?:\[\w+\])?:.*|fatal:.*"
    r"|.*panicked at.*)$",
    re.MULTILINE,
)
_CWD_SAID = (
    re.compile(r"<cwd>([^<\n]{1,500})</cwd>"),
    re.compile(r"^Working directory: (\S[^\n]{0,500})$", re.MULTILINE),
    re.compile(r"# Current Working Directory \(([^)\n]{1,500})\)"),
)
# A search that found nothing exits 1 without being wrong (grep, diff, test).
_SEARCH = re.compile(r"(?:^|[|;&(]\s*)(?:grep|egrep|fgrep|rg|ag|ack|diff|cmp|test|\[)\s")
_TOPLEVEL = re.compile(r"git\s+rev-parse\s+--show-toplevel")
# SWE-agent's interface: its shell prompt names the directory and the open file after every
# command, and its ``edit N:M`` changes the open file.
_CURRENT_DIRECTORY = re.compile(r"\(Current directory: ([^)\n]{1,500})\)")
_OPEN_FILE = re.compile(r"\(Open file: ([^)\n]{1,500})\)")
_LINE_EDIT = re.compile(r"edit \d+:\d+\b")


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the ledger: what (``value``: a path, a command's first line), how (``kind``
    and, for a change, ``actions``), and the id of the newest call that did it."""

    section: str  # failing, changed, commands, read
    value: str
    id: str
    actions: tuple[str, ...] = ()  # a change: created, edited, deleted, moved, ...
    status: int | None = None  # a command's exit status, where its result says it
    detail: str = ""  # a failure: failing tests and the last error line

    def line(self, ref: str | None = None) -> str:
        """The entry as the ledger prints it, its id shown as ``ref`` (default: the whole id)."""
        ident = f" [{ref or self.id}]"
        if self.section == "changed":
            return f"- {'+'.join(self.actions)} {self.value}{ident}"
        if self.section == "read":
            return f"- {self.value}{ident}"
        status = "" if self.status is None else f" exit {self.status}"
        detail = f": {self.detail}" if self.detail else ""
        return f"- `{self.value}`{status}{detail}{ident}"

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "value": self.value,
            "id": self.id,
            "actions": list(self.actions),
            "status": self.status,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Ledger:
    """What the removed calls did: where, every entry (newest first per section), and the
    calls that gave no entry, counted per tool."""

    entries: tuple[Entry, ...]
    calls: int  # removed tool calls it was read from
    cwd: str | None = None
    root: str | None = None
    branch: str | None = None
    others: tuple[tuple[str, int], ...] = ()  # (tool, calls) that gave no entry
    other_ids: tuple[tuple[str, ...], ...] = ()  # each tool's calls of ``others``, newest first
    refs: Mapping[str, str] = field(default_factory=dict)  # id -> the unique start shown

    def ref(self, call_id: str) -> str:
        """How the ledger shows ``call_id``: its shortest unique start (`short_ids`)."""
        return self.refs.get(call_id, call_id)

    def section(self, name: str) -> list[Entry]:
        return [e for e in self.entries if e.section == name]

    def text(self, cap: int, count: Callable[[str], int]) -> Rendered:
        """The ledger in at most ``cap`` tokens (as ``count`` counts them); `Rendered` says
        which entries it shows."""
        return _render(self, cap, count)

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cwd": self.cwd,
            "repository": self.root,
            "branch": self.branch,
            "entries": [e.to_json() for e in self.entries],
            "other_calls": dict(self.others),
            "other_call_ids": {
                t: list(ids) for (t, _), ids in zip(self.others, self.other_ids, strict=False)
            },
            "shown_ids": dict(self.refs),
        }


@dataclass(frozen=True, slots=True)
class Rendered:
    """A ledger's text under a cap: the entries shown, and how many it left out."""

    text: str
    shown: tuple[Entry, ...]
    omitted: int
    tokens: int
    cap: int

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "cap": self.cap,
            "shown": len(self.shown),
            "omitted": self.omitted,
            "text": self.text,
        }


def clean(text: str) -> str:
    """``text`` on one line: control characters, bidirectional overrides and lone surrogates as
    visible escapes (a path or a command can hold any of them)."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(escape, text.replace("\n", "\\n").replace("\t", " "))


# ------------------------------------------------------------------------------- derivation


class _Found:
    """What the calls read so far said, by section, keyed by what each entry names."""

    __slots__ = ("branch", "changed", "commands", "cwd", "failing", "others", "read", "root")

    def __init__(self) -> None:
        self.changed: dict[str, Entry] = {}
        self.commands: dict[str, Entry] = {}
        self.failing: dict[str, Entry] = {}
        self.read: dict[str, Entry] = {}
        self.others: dict[str, list[str]] = {}  # tool -> ids of its calls, newest first
        self.cwd: str | None = None
        self.root: str | None = None
        self.branch: str | None = None


def derive(
    messages: Sequence[Message], removed: Collection[str], system: Sequence[Any] = ()
) -> Ledger:
    """The ledger of the calls of ``messages`` whose ids are in ``removed`` (newest first);
    ``system`` (the system prompt's blocks) and the texts of ``messages`` give the working
    directory where no removed call names one."""
    calls: list[ToolCall] = []
    results: dict[str, ToolResult] = {}
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolCall) and block.id in removed:
                calls.append(block)
            elif isinstance(block, ToolResult):
                results.setdefault(block.call_id, block)
    found = _Found()
    for call in reversed(calls):
        found.cwd = found.cwd or workdir_of(call)
        if not _read_call(found, call, results.get(call.id)):
            found.others.setdefault(clean(call.name), []).append(call.id)
    cwd = found.cwd or _said_cwd(messages, system)
    ordered = [
        *found.failing.values(),
        *found.changed.values(),
        *found.commands.values(),
        *(e for key, e in found.read.items() if key not in found.changed),
    ]
    others = sorted(found.others.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    every = [b.id for m in messages for b in m.blocks if isinstance(b, ToolCall)]
    return Ledger(
        entries=tuple(ordered),
        calls=len(calls),
        cwd=clean(cwd) if cwd else None,
        root=clean(found.root) if found.root else None,
        branch=clean(found.branch) if found.branch else None,
        others=tuple((tool, len(ids)) for tool, ids in others),
        other_ids=tuple(tuple(ids) for _, ids in others),
        refs=short_ids(every, {c.id for c in calls}),
    )


SHORT_ID = 12  # the fewest characters of an id the ledger shows
OTHER_IDS = 10  # the ids shown of each tool's calls that gave no entry, newest first


def short_ids(ids: Sequence[str], wanted: Collection[str]) -> dict[str, str]:
    """For each id of ``wanted``, its shortest start of `SHORT_ID` characters or more that no
    other id of ``ids`` starts with (the whole id where none is shorter); ids that need
    escaping on one line, or that another id equals, are left whole."""
    unique = sorted(set(ids) | set(wanted))
    refs: dict[str, str] = {}
    for at, ident in enumerate(unique):
        if ident not in wanted or clean(ident) != ident:
            continue
        shared = max(
            (_common(ident, unique[j]) for j in (at - 1, at + 1) if 0 <= j < len(unique)),
            default=0,
        )
        size = max(SHORT_ID, shared + 1)
        if size < len(ident):
            refs[ident] = ident[:size]
    return refs


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _read_call(found: _Found, call: ToolCall, result: ToolResult | None) -> bool:
    """Add what one call did; False when it said nothing the ledger keeps. The calls come
    newest first: an older one adds only what no newer one said."""
    command = command_of(call)
    failed = result is not None and (
        result.is_error or (command is not None and (exit_status(result) or 0) != 0)
    )
    if command is not None:
        return _command(found, call, command, result, failed)
    return _tool(found, call, result, failed)


def _command(
    found: _Found, call: ToolCall, command: str, result: ToolResult | None, failed: bool
) -> bool:
    line = clean(first_line(command))
    for artifact in shell_artifacts(command):
        _change(found, artifact.action, artifact.value, call.id)
    if result is not None:
        _where(found, command, result)
        if not failed and _line_edit(found, line, result, call.id):
            return True
    reads = read_paths(call)
    if reads and not failed:
        _reads(found, reads, call.id)
        return True
    if line in found.commands or line in found.failing:
        return True  # a newer run of the same line already said how it ended
    status = exit_status(result) if result is not None else None
    detail = failure(result.text) if failed and result is not None else ""
    if failed and (detail or not (status == 1 and _SEARCH.search(line))):
        found.failing[line] = Entry("failing", line, call.id, status=status, detail=detail)
    else:
        found.commands[line] = Entry("commands", line, call.id, status=status)
    return True


def _line_edit(found: _Found, line: str, result: ToolResult, call_id: str) -> bool:
    """SWE-agent's ``edit N:M``: the file it changed is the open file its output names."""
    if not _LINE_EDIT.match(line):
        return False
    edited = _OPEN_FILE.findall(result.text[-2000:])
    if not edited or edited[-1] == "n/a":
        return False
    _change(found, "edited", edited[-1], call_id)
    return True


def _tool(found: _Found, call: ToolCall, result: ToolResult | None, failed: bool) -> bool:
    if failed and result is not None:
        subject = _subject(call)
        if subject is None:
            return False
        path, what = subject
        if path not in found.changed and path not in found.read and what not in found.failing:
            detail = failure(result.text)
            found.failing[what] = Entry("failing", what, call.id, detail=detail)
        return True
    changes = list(artifacts(call))
    for artifact in changes:
        _change(found, artifact.action, artifact.value, call.id)
    reads = read_paths(call)
    _reads(found, reads, call.id)
    return bool(changes or reads)


def _subject(call: ToolCall) -> tuple[str, str] | None:
    """What a failed call worked on (a path, else its first argument) and its line."""
    data = call.input if isinstance(call.input, Mapping) else {}
    path = next((v for k in PATH_KEYS if isinstance(v := data.get(k), str) and v), None)
    if path is None:
        path = next((v for v in strings(call.input) if v.strip()), None)
    if path is None:
        return None
    path = clean(first_line(path, 80))
    return path, clean(f"{call.name} {path}")


def _reads(found: _Found, paths: Sequence[str], call_id: str) -> None:
    for path in paths:
        found.read.setdefault(clean(path), Entry("read", clean(path), call_id))


def _change(found: _Found, action: str, value: str, call_id: str) -> None:
    """A change to ``value``: the newest call's id, every action (oldest first)."""
    path = clean(value)
    seen = found.changed.get(path)
    if seen is None:
        found.changed[path] = Entry("changed", path, call_id, actions=(action,))
    elif action not in seen.actions:
        found.changed[path] = Entry("changed", path, seen.id, actions=(action, *seen.actions))


def _where(found: _Found, command: str, result: ToolResult) -> None:
    """The working directory a shell prompt in the output names, and the repository root and
    branch a git command's output states."""
    if found.cwd is None:
        said = _CURRENT_DIRECTORY.findall(result.text[-2000:])
        if said:
            found.cwd = said[-1].strip()
    text = result.text[:2000]
    if found.root is None and _TOPLEVEL.search(command):
        first = text.strip().splitlines()[:1]
        if first and first[0].startswith("/"):
            found.root = first[0].strip()
    if found.branch is None:
        on = re.search(r"^On branch (\S+)", text, re.MULTILINE)
        if on:
            found.branch = on.group(1)
        elif re.search(r"git\s+branch\s+--show-current", command) and text.strip():
            found.branch = text.strip().splitlines()[0].strip()


def _said_cwd(messages: Sequence[Message], system: Sequence[Any]) -> str | None:
    """The working directory the harness states in its texts (Codex's ``<cwd>``, Claude Code's
    ``Working directory:``, Cline's environment details), the newest statement."""
    texts = [b.text for b in system if isinstance(b, Text)]
    texts.extend(b.text for m in messages for b in m.blocks if isinstance(b, Text))
    for text in reversed(texts):
        for pattern in _CWD_SAID:
            said = pattern.findall(text)
            if said:
                return str(said[-1]).strip()
    return None


def failure(text: str, width: int = 200) -> str:
    """What a failed call's output shows: its failing tests (the first three) and its last
    error line, on one line."""
    scanned = (
        text if len(text) <= _SCANNED else text[: _SCANNED // 2] + "\n" + text[-_SCANNED // 2 :]
    )
    tests = list(dict.fromkeys(next(g for g in m.groups() if g) for m in _TEST.finditer(scanned)))
    parts = tests[:3] + ([f"+{len(tests) - 3} more"] if len(tests) > 3 else [])
    errors = [m.group(0).strip() for m in _ERROR.finditer(scanned)]
    if errors:
        parts.append(errors[-1])
    detail = clean("; ".join(parts))
    return detail if len(detail) <= width else detail[: width - 3] + "..."


# ------------------------------------------------------------------------------- rendering


def _header(ledger: Ledger) -> list[str]:
    lines = [
        f"{HEADING} (derived by ipse, not written by you; newest first; "
        "[id]: give it to recall for the call and its output)"
    ]
    where = [
        f"cwd {ledger.cwd}" if ledger.cwd else "",
        f"repository {ledger.root}" if ledger.root else "",
        f"branch {ledger.branch}" if ledger.branch else "",
    ]
    if any(where):
        lines.append("Where: " + "; ".join(w for w in where if w))
    return lines


def _others(ledger: Ledger, shown: Sequence[int]) -> str:
    """The calls that gave no entry, per tool: how many, and the ids of the newest ``shown``
    of each."""
    if not ledger.others:
        return ""
    parts = []
    for (tool, n), ids, k in zip(ledger.others, ledger.other_ids, shown, strict=True):
        refs = "".join(f" [{ledger.ref(i)}]" for i in ids[:k])
        more = f" (+{n - k} older)" if 0 < k < n else ""
        parts.append(f"{tool} x{n}{refs}{more}")
    return "Other calls: " + ", ".join(parts)


def _omitted(n: int, cap: int) -> str:
    return f"({n} older entries left out at the {cap}-token cap: recall lists every removed call)"


class _Choice:
    """What a rendering shows: the entries, and how many ids of each tool's other calls (None:
    no line for them)."""

    __slots__ = ("entries", "ids")

    def __init__(self, ids: list[int] | None) -> None:
        self.entries: list[Entry] = []
        self.ids = ids

    def shrink(self) -> bool:
        """Show one thing less (the oldest other-call id, then the oldest entry, then the
        other calls' line); False when nothing is left to take away."""
        ids = self.ids
        if ids is not None and any(k > 1 for k in ids):
            ids[max(range(len(ids)), key=lambda i: (ids[i], i))] -= 1
        elif self.entries:
            self.entries.pop()
        elif ids is not None:
            self.ids = None
        else:
            return False
        return True


def _render(ledger: Ledger, cap: int, count: Callable[[str], int]) -> Rendered:
    """The header, then the other calls' line with the newest id of each tool, then entries
    section by section, newest first, then more ids of the other calls, while the cap holds."""
    header = _header(ledger)
    budget = cap - sum(count(line + "\n") for line in header)
    budget -= count(_omitted(len(ledger.entries), cap) + "\n")
    choice = _Choice(None)
    if ledger.others:
        newest = [1] * len(ledger.others)
        cost = count(_others(ledger, newest) + "\n")
        if cost <= budget:
            choice.ids, budget = newest, budget - cost
    for name in SECTIONS:
        title = count(_TITLES[name] + ":\n")
        opened = False
        for entry in ledger.section(name):
            cost = count(entry.line(ledger.ref(entry.id)) + "\n") + (0 if opened else title)
            if cost > budget:
                break
            choice.entries.append(entry)
            budget -= cost
            opened = True
    if choice.ids is not None:
        _more_ids(ledger, choice.ids, budget, count)
    while True:
        text = _text(ledger, choice, cap)
        tokens = count(text)
        if tokens <= cap or not choice.shrink():
            break
    shown = tuple(choice.entries)
    return Rendered(text, shown, len(ledger.entries) - len(shown), tokens, cap)


def _more_ids(ledger: Ledger, ids: list[int], budget: int, count: Callable[[str], int]) -> None:
    """Add the other calls' older ids, the newest first across tools, while ``budget`` holds."""
    while True:
        added = False
        for at, every in enumerate(ledger.other_ids):
            if ids[at] >= min(len(every), OTHER_IDS):
                continue
            cost = count(f" [{ledger.ref(every[ids[at]])}]")
            if cost > budget:
                return
            ids[at] += 1
            budget -= cost
            added = True
        if not added:
            return


def _text(ledger: Ledger, choice: _Choice, cap: int) -> str:
    lines = _header(ledger)
    for name in SECTIONS:
        shown = [e for e in choice.entries if e.section == name]
        if shown:
            lines.append(_TITLES[name] + ":")
            lines.extend(e.line(ledger.ref(e.id)) for e in shown)
    if choice.ids is not None:
        lines.append(_others(ledger, choice.ids))
    omitted = len(ledger.entries) - len(choice.entries)
    if omitted:
        lines.append(_omitted(omitted, cap))
    return "\n".join(lines)


__all__ = [
    "DEFAULT_LEDGER_TOKENS",
    "HEADING",
    "SECTIONS",
    "Entry",
    "Ledger",
    "Rendered",
    "clean",
    "derive",
    "failure",
    "short_ids",
]
