"""Following session files as a harness writes them: one line per new break (``ipse prefix
--watch``), the way the proxy's log reports each request on the wire.

A `Watcher` holds, per file, its size and time last seen and how many of its calls were
reported. Each `poll` looks at the JSONL files under its folders (Claude Code's
``~/.claude/projects``, Codex's ``~/.codex/sessions``), analyses again each file that changed
(the analysis of a session is a fraction of a second; its cost follows the file, not the number
of polls), and returns the breaks of the calls it had not reported yet. A file that cannot be
read as it stands (a line being written) is tried again at the next poll. The files present
when watching begins are read then, and their breaks count as seen unless asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ipse.errors import IpseError
from ipse.prefix._report import MIN_TOKENS, analyze
from ipse.prefix._requests import read_requests
from ipse.prefix._rows import Row


@dataclass(frozen=True, slots=True)
class Break:
    """One charged loss, found in a watched file."""

    path: Path
    row: Row

    def line(self, root: Path | None = None) -> str:
        row, cause = self.row, self.row.cause
        assert cause is not None
        inside = root is not None and self.path.is_relative_to(root)
        name = str(self.path.relative_to(root)) if inside and root else str(self.path)
        when = row.time.strftime("%H:%M:%S") if row.time else "--:--:--"
        who = f" {row.agent}" if row.agent else ""
        return (
            f"{when} {name}{who} #{row.index} {cause.kind} at {cause.location}: "
            f"{row.lost_tokens:,} tokens, ${row.cost_lost_usd:,.4f}"
            + (" (compaction, apart)" if row.compaction else "")
        )


@dataclass(slots=True)
class _Seen:
    stamp: tuple[int, int]  # (size, modification time in ns)
    reported: int  # calls whose breaks were reported (or counted as seen)


class Watcher:
    """Polls folders of session files for new breaks (see the module's docstring)."""

    def __init__(
        self, folders: Sequence[Path], *, min_tokens: int = MIN_TOKENS, from_start: bool = False
    ) -> None:
        self.folders = list(folders)
        self.min_tokens = min_tokens
        self._seen: dict[Path, _Seen] = {}
        if not from_start:
            self.poll()  # what is there already counts as seen

    def files(self) -> Iterable[Path]:
        for folder in self.folders:
            if folder.is_file():
                yield folder
            elif folder.is_dir():
                yield from sorted(folder.rglob("*.jsonl"))

    def poll(self) -> list[Break]:
        """The breaks in calls not reported before, file by file."""
        found: list[Break] = []
        for path in self.files():
            if path.parent.name == "subagents":
                continue  # (read with the session it belongs to)
            try:
                status = path.stat()
            except OSError:
                continue
            stamp = (status.st_size, status.st_mtime_ns)
            seen = self._seen.get(path)
            sub = path.with_suffix("") / "subagents"
            if sub.is_dir():  # a sub-agent's file changes its session's analysis
                for agent in sub.glob("*.jsonl"):
                    try:
                        other = agent.stat()
                    except OSError:
                        continue
                    stamp = (stamp[0] + other.st_size, max(stamp[1], other.st_mtime_ns))
            if seen is not None and seen.stamp == stamp:
                continue
            rows = self._rows(path)
            if rows is None:
                continue  # not readable as it stands: next time
            start = seen.reported if seen is not None else 0
            found.extend(Break(path, row) for row in rows[start:] if row.cause is not None)
            self._seen[path] = _Seen(stamp, len(rows))
        return found

    def _rows(self, path: Path) -> list[Row] | None:
        try:
            log = read_requests(path)
            return analyze(
                log.requests, warnings=log.warnings, min_tokens=self.min_tokens, merged=log.merged
            ).rows
        except IpseError:
            return None


def default_folders(home: Path | None = None) -> list[Path]:
    """Claude Code's projects folder and Codex's sessions folder, those that exist."""
    base = home if home is not None else Path.home()
    return [p for p in (base / ".claude" / "projects", base / ".codex" / "sessions") if p.is_dir()]
