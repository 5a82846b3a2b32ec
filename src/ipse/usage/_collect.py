"""Reading every session a user has into the ledger, reading only what changed since last time.

The files: each agent CLI's session folder (given by the caller: the agent table lives above
this layer) and the paths asked for (files, or folders searched for ``*.jsonl`` and Gemini's
``session-*.json``), each with its reader (`reader_for`: by the shape the format table gives
the file's format). For each file the index (`UsageIndex`)
knows the size, modification time and inode it had when read, and the offset it was read to:

* nothing changed in any file (the fingerprint of them all is the last ledger's): the ledger
  is read back, and no session file is opened;
* a file grew, the same inode, and the bytes before the old offset are still the ones read:
  an append, read from that offset on;
* anything else (a new file, a file truncated, rewritten or replaced): read from the start;
* a file gone: forgotten.

Files to read are spread over a process pool (one process per core, up to the files' count)
once there is more than `POOL_BYTES` to read; each call is then counted once across all files
(`ipse.usage._ledger.one_each`).
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse import _progress as progress
from ipse.errors import InputError, IpseError
from ipse.transcript._shared import Shape, format_named
from ipse.usage._call import Call
from ipse.usage._claude import ClaudeReader
from ipse.usage._codex import CodexReader
from ipse.usage._gemini import GeminiReader
from ipse.usage._index import FileEntry, UsageIndex
from ipse.usage._ledger import Ledger, Saving, ledger_of
from ipse.usage._proxy import ProxyReader
from ipse.usage._statusline import save_summary

# The reader of each shape of input the format table knows (`ipse.transcript.format_named`):
# a session (Claude Code's), a rollout (Codex's), a log of exchanges (the proxy's record), and
# a conversation, whose file records the calls' tokens when its agent CLI writes them (Gemini
# CLI's does; the other conversation formats hold no billed call).
_BY_SHAPE: dict[Shape, type[Any]] = {
    Shape.SESSION: ClaudeReader,
    Shape.ROLLOUT: CodexReader,
    Shape.LOG: ProxyReader,
    Shape.CONVERSATION: GeminiReader,
}


def reader_for(format_name: str | None) -> type[Any] | None:
    """The reader of a file of format ``format_name`` (None: no bill is read from it)."""
    entry = format_named(format_name) if format_name else None
    return None if entry is None else _BY_SHAPE.get(entry.shape)


POOL_BYTES = 16 * 1024 * 1024
TAIL = 64  # bytes before the offset read to, compared on an append


@dataclass(frozen=True, slots=True)
class Folder:
    """A folder of one agent CLI's sessions: the files its globs name, read as ``format``."""

    root: Path
    globs: tuple[str, ...]
    format: str


@dataclass(slots=True)
class Collected:
    """The ledger, and what this run read to make it."""

    ledger: Ledger
    files: int
    read: list[tuple[str, int, int]] = field(default_factory=list)  # path, from, to
    warnings: list[str] = field(default_factory=list)


def find_files(folders: Iterable[Folder], paths: Sequence[Path]) -> dict[str, str]:
    """Every session file, by path, with the format it is read as."""
    found: dict[str, str] = {}
    for folder in folders:
        if not folder.root.is_dir():
            continue
        root = glob.escape(str(folder.root))
        for pattern in folder.globs:
            for name in glob.iglob(os.path.join(root, pattern), recursive=True):
                found.setdefault(name, folder.format)
    for path in paths:
        if path.is_dir():
            names = glob.iglob(
                os.path.join(glob.escape(str(path)), "**", "*.json*"), recursive=True
            )
            for name in sorted(names):
                kind = _sniff(Path(name), strict=False)
                if kind is not None:
                    found.setdefault(name, kind)
        elif path.is_file():
            kind = _sniff(path, strict=True)
            assert kind is not None
            found.update({name: kind for name in _with_subagents(path, kind)})
        else:
            raise InputError("no such file or folder", path=path)
    return found


def _with_subagents(path: Path, kind: str) -> list[str]:
    """A file given by path, and where it is a Claude Code session, its sub-agents' files
    (``<session>/subagents/*.jsonl``)."""
    subagents = path.with_suffix("") / "subagents"
    if not getattr(reader_for(kind), "has_subagents", False) or not subagents.is_dir():
        return [str(path)]
    return [str(path), *(str(p) for p in sorted(subagents.glob("*.jsonl")))]


def _sniff(path: Path, *, strict: bool) -> str | None:
    """The reader of a file given by path, from its first line (None, or with ``strict`` an
    `InputError`, when it is none of the formats a bill is read from)."""
    from ipse import jsonio
    from ipse.transcript._shared import record_format

    if path.suffix not in (".jsonl", ".json") and not strict:
        return None
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
        value = jsonio.loads(first)
    except (OSError, ValueError):
        value = None
    kind = record_format(value) if isinstance(value, dict) else None
    if kind is None and path.suffix == ".json":  # one document over many lines: read it all
        from ipse.transcript import detect

        try:
            kind = detect(path)
        except (IpseError, OSError):
            kind = None
    if reader_for(kind) is not None:
        return kind
    if strict:
        raise InputError(
            "not a session file ipse usage reads (Claude Code, Codex, Gemini CLI, an ipse "
            "proxy record)",
            path=path,
        )
    return None


def _stats(files: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """Size, modification time (ns) and inode of each file that still exists."""
    out = {}
    for name in files:
        try:
            st = os.stat(name)
        except OSError:
            continue
        out[name] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def fingerprint(files: dict[str, str], stats: dict[str, tuple[int, int, int]]) -> str:
    digest = hashlib.sha256()
    for name in sorted(stats):
        size, mtime, inode = stats[name]
        digest.update(f"{name}\0{files[name]}\0{size}\0{mtime}\0{inode}\n".encode())
    return digest.hexdigest()


def collect(
    folders: Iterable[Folder],
    paths: Sequence[Path] = (),
    *,
    store: str | None = None,
    jobs: int | None = None,
) -> Collected:
    """The ledger of every session in ``folders`` and ``paths`` (see the module's docstring)."""
    files = find_files(folders, paths)
    stats = _stats(files)
    mark = fingerprint(files, stats)
    index = UsageIndex(store)
    try:
        ledger = index.ledger(mark)
        if ledger is not None:
            return Collected(ledger, len(stats))
        return _update(index, files, stats, mark, jobs)
    finally:
        index.close()


def _update(
    index: UsageIndex,
    files: dict[str, str],
    stats: dict[str, tuple[int, int, int]],
    mark: str,
    jobs: int | None,
) -> Collected:
    known = index.files()
    gone = [name for name in known if name not in stats]
    work: list[tuple[str, str, int, dict[str, Any]]] = []  # path, reader, from, state
    appended: list[str] = []
    for name, (size, mtime, inode) in stats.items():
        entry = known.get(name)
        if entry is not None and entry.reader == files[name]:
            if (entry.size, entry.mtime_ns, entry.inode) == (size, mtime, inode):
                continue
            if entry.inode == inode and size >= entry.read_to and _same_tail(name, entry):
                work.append((name, files[name], entry.read_to, entry.state))
                appended.append(name)
                continue
        work.append((name, files[name], 0, {}))
    before = index.calls(appended) if appended else {}
    tasks = [
        (name, reader, start, state, before.get(name, [])) for name, reader, start, state in work
    ]
    results = _read_all(tasks, jobs)
    collected = Collected(Ledger(), len(stats))
    entries = []
    for (name, reader, start, _, _), (end, state, calls, tail, warnings) in zip(
        tasks, results, strict=True
    ):
        size, mtime, inode = stats[name]
        old = known.get(name)
        losses = old.losses if old is not None and start else None
        replayed = old.replayed_size if old is not None and start else None
        entries.append(
            (FileEntry(name, reader, size, mtime, inode, end, tail, state, losses, replayed), calls)
        )
        collected.read.append((name, start, end))
        collected.warnings.extend(warnings)
    index.put(entries, gone)
    fresh = {entry.path: calls for entry, calls in entries}
    every = index.calls() if len(fresh) < len(stats) else {}
    every.update(fresh)
    states = {name: entry.state for name, entry in known.items() if name in stats}
    states.update({entry.path: entry.state for entry, _ in entries})
    collected.ledger = _ledger(every.values(), states, {**known, **{e.path: e for e, _ in entries}})
    collected.ledger.files = len(stats)
    index.save_ledger(mark, collected.ledger)
    save_summary(collected.ledger)
    return collected


def _ledger(
    calls_by_file: Iterable[list[Call]],
    states: dict[str, dict[str, Any]],
    entries: dict[str, FileEntry],
) -> Ledger:
    from ipse.usage._cost import Costs
    from ipse.usage._ledger import Loss

    costs = Costs()
    ledger = ledger_of((call for calls in calls_by_file for call in calls), costs)
    for state in states.values():
        for time, conversation, model, provider, tokens, anchor in state.get("handoffs") or ():
            (_, _, _, read, _), _ = costs.per_token(model, provider)
            ledger.savings.append(
                Saving(
                    time,
                    "proxy",
                    conversation,
                    model,
                    f"{conversation}:{anchor}",
                    tokens,
                    tokens * read,
                )
            )
    for entry in entries.values():
        if entry.path not in states:
            continue
        if entry.losses is not None:
            ledger.replayed += 1
            ledger.losses.extend(Loss(*values) for values in entry.losses)
        elif getattr(reader_for(entry.reader), "replayed", False) and not _sub_agents(entry):
            ledger.unreplayed += 1
    return ledger


def bill_of(path: Path) -> Ledger | None:
    """The ledger of one input read directly, without the index (nothing is stored): a
    session file with its sub-agents' files, a rollout, a Gemini CLI session or a proxy
    record. None when the input is none of those (a folder of exchanges, a request body)."""
    if not path.is_file():
        return None
    kind = _sniff(path, strict=False)
    if kind is None:
        return None
    files = {name: kind for name in _with_subagents(path, kind)}
    every = {name: read_file((name, reader, 0, {}, [])) for name, reader in files.items()}
    entries = {
        name: FileEntry(name, files[name], 0, 0, 0, end, tail, state)
        for name, (end, state, _, tail, _) in every.items()
    }
    ledger = _ledger((calls for _, _, calls, _, _ in every.values()),
                     {n: e.state for n, e in entries.items()}, {})  # fmt: skip
    ledger.files = len(files)
    return ledger


def _sub_agents(entry: FileEntry) -> bool:
    """Whether the file is a sub-agent's (the replay of its parent's session reads it)."""
    return Path(entry.path).parent.name == "subagents"


def _same_tail(name: str, entry: FileEntry) -> bool:
    """Whether the bytes before the offset read to are still the ones read."""
    return _tail(name, entry.read_to) == entry.tail


def _tail(name: str, end: int) -> bytes:
    start = max(0, end - TAIL)
    try:
        with open(name, "rb") as handle:
            handle.seek(start)
            return handle.read(end - start)
    except OSError:
        return b""


def read_file(
    task: tuple[str, str, int, dict[str, Any], list[Call]],
) -> tuple[int, dict[str, Any], list[Call], bytes, list[str]]:
    """Read one file from its offset: (the offset read to, the reader's state, the file's
    calls, the bytes before that offset, warnings)."""
    name, reader_name, start, state, calls = task
    calls = list(calls)
    reader_class = reader_for(reader_name)
    assert reader_class is not None
    reader = reader_class(Path(name), calls, state)
    warnings: list[str] = []
    try:
        end = reader.read(start)
    except InputError as exc:
        warnings.append(str(exc))
        end = start
    return end, reader.state(), calls, _tail(name, end), warnings


def _read_all(
    tasks: list[tuple[str, str, int, dict[str, Any], list[Call]]], jobs: int | None
) -> list[tuple[int, dict[str, Any], list[Call], bytes, list[str]]]:
    """Every task read, in a process pool when there is enough to read."""
    todo = sum(max(0, _size(t[0]) - t[2]) for t in tasks)
    workers = min(jobs or os.cpu_count() or 1, len(tasks))
    done = 0
    if workers < 2 or todo < POOL_BYTES:
        out = []
        for task in tasks:
            out.append(read_file(task))
            done += 1
            progress.update("reading sessions", done, len(tasks))
        return out
    import multiprocessing

    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))  # largest first
    results: list[Any] = [None] * len(tasks)
    with context.Pool(workers) as pool:
        for at, result in zip(
            order, pool.imap(read_file, [tasks[i] for i in order], chunksize=1), strict=True
        ):
            results[at] = result
            done += 1
            progress.update("reading sessions", done, len(tasks))
    return results


def _size(name: str) -> int:
    try:
        return os.stat(name).st_size
    except OSError:
        return 0


__all__ = [
    "Collected",
    "Folder",
    "bill_of",
    "collect",
    "find_files",
    "fingerprint",
    "reader_for",
]
