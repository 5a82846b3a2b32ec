"""``resume``: the state folder rendered for a fresh context, in reading order.

The state files come first, in lexicographic order, then the last WAL entry. The next step is
checked against its newest WAL record: when ``99_next.md`` is missing, torn, or was replaced by
something the log does not vouch for, the WAL's recorded step is shown instead, with a note
saying so. The log is read from its end, so resuming costs the same with 10 lines or a million.
Corrupted WAL lines are skipped with one warning per kind (how many, and the first one's line);
nothing here is fatal once the folder exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from ipse._plain import Plain
from ipse._sha256 import sha256
from ipse.statedir import _files as files
from ipse.statedir import _wal as wal
from ipse.statedir._budget import Section, fit, render

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ipse.fileio import StrPath

PRIORITY = {files.GOAL: 0, files.INVARIANTS: 1, files.NEXT: 2}
WAL_TITLE = "last WAL entry"


class NextStep(Plain):
    """The next step resume reports, where it came from, and why when not from the file."""

    __slots__ = ("note", "source", "text")

    def __init__(self, text: str | None, source: str, note: str | None = None) -> None:
        self.text = text
        self.source = source  # "file", "wal" or "none"
        self.note = note


class ResumeView(Plain):
    """Everything ``resume`` prints, before rendering."""

    __slots__ = ("folder", "last_entry", "next_step", "sections", "trimmed", "warnings")

    def __init__(
        self,
        folder: Path,
        sections: list[Section],
        next_step: NextStep,
        last_entry: str | None,
        warnings: list[str] | None = None,
        trimmed: list[str] | None = None,
    ) -> None:
        self.folder = folder
        self.sections = sections
        self.next_step = next_step
        self.last_entry = last_entry
        self.warnings: list[str] = [] if warnings is None else warnings
        self.trimmed: list[str] = [] if trimmed is None else trimmed

    def header(self) -> str:
        return (
            f"ipse state resume: the state folder {self.folder}/ in reading order "
            "(00 through 99), then the last WAL entry.\n"
        )

    def text(self, budget: int | None = None, count: Callable[[str], int] | None = None) -> str:
        """The rendered output, within ``budget`` tokens when one is given."""
        sections = list(self.sections)
        if self.warnings:
            notes = "\n".join(f"- {w}" for w in self.warnings)
            sections.append(Section("warnings", notes, 5, 2000))
        if budget is None or count is None:
            return render(self.header(), sections)
        out, self.trimmed = fit(self.header(), sections, budget, count)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "files": [{"name": s.title, "text": s.body} for s in self.sections if s.order < 1000],
            "next": {
                "text": self.next_step.text,
                "source": self.next_step.source,
                "note": self.next_step.note,
            },
            "last_wal_entry": self.last_entry,
            "warnings": self.warnings,
            "trimmed": self.trimmed,
        }


def _next_step(folder: Path, found: wal.Tail, warnings: list[str]) -> tuple[NextStep, str | None]:
    path = folder / files.NEXT
    try:
        data = files.read_bytes(path)
    except files.NotRegular as exc:
        warnings.append(f"{files.NEXT} is {exc.what}: not read")
        data = None
    recorded = found.match.next_step() if found.match is not None else None
    file_text = data.decode("utf-8", errors="replace") if data is not None else None
    if recorded is None:
        if file_text is None:
            return NextStep(
                None, "none", f"{files.NEXT} is missing and the WAL records no step"
            ), None
        warnings.append("the WAL records no next step; 99_next.md is shown unchecked")
        return NextStep(file_text.rstrip("\n"), "file"), file_text
    text, digest = recorded
    if data is None:
        note = f"{files.NEXT} is missing; this is the next step recorded in the WAL"
    elif sha256(data).hexdigest() != digest:
        note = (
            f"{files.NEXT} does not match its last WAL record (torn, edited, or an "
            "interrupted `next`); this is the next step recorded in the WAL"
        )
    else:
        return NextStep(text, "file"), file_text
    warnings.append(note)
    return NextStep(text, "wal", note), f"[ipse: {note}]\n{text}\n"


def _skipped(path: Path, bad: list[wal.BadLine]) -> list[str]:
    """One warning per kind of bad WAL line (torn, corrupted), with how many and where the
    first is: a log with 100,000 garbage lines gives two lines of warning, not 100,000."""
    lines: list[str] = []
    for torn, kind in ((True, "torn (an interrupted write)"), (False, "corrupted")):
        offsets = [b.offset for b in bad if b.torn is torn]
        if not offsets:
            continue
        known = [o for o in offsets if o is not None]
        where = f"line {wal.line_number(path, min(known))}" if known else ""
        if len(offsets) == 1:
            lines.append(f"skipped a {kind} WAL line" + (f" ({where})" if where else ""))
        else:
            first = f" (the first at {where}; `ipse state verify` lists each)" if where else ""
            lines.append(f"skipped {len(offsets):,} {kind} WAL lines{first}")
    return lines


def resume(folder: StrPath) -> ResumeView:
    """Read the state folder for a fresh context (see the module docstring)."""
    folder = Path(folder)
    names = files.state_files(folder)
    warnings: list[str] = []
    try:
        found = wal.last_next(folder / files.WAL)
    except files.NotRegular as exc:
        warnings.append(f"{files.WAL} is {exc.what}: not read")
        found = wal.Tail()
    if not files.is_regular(folder / files.WAL):
        warnings.append("no .wal in the state folder: the next step cannot be checked")
    warnings.extend(_skipped(folder / files.WAL, found.bad))
    if found.last is not None and found.last.seq > wal.LONG_WAL_LINES:
        warnings.append(
            f"the WAL has {found.last.seq} lines; run `ipse state rotate` to start a new one"
        )
    step, next_body = _next_step(folder, found, warnings)
    sections: list[Section] = []
    for name in sorted({*names, files.GOAL, files.INVARIANTS, files.NEXT}):
        if name == files.NEXT:
            body = next_body if next_body is not None else f"[ipse: {step.note}]"
        else:
            try:
                text = files.read_text(folder / name)
            except files.NotRegular as exc:
                warnings.append(f"{name} is {exc.what}, not a regular file: not read")
                continue
            if text is None:
                warnings.append(f"{name} is missing")
                continue
            body = text
        priority = PRIORITY.get(name, 4)
        sections.append(
            Section(
                name,
                body,
                priority,
                len(sections),
                keep_tail=name == files.INVARIANTS,
                required=name in (files.GOAL, files.NEXT),
            )
        )
    last = found.last.summary() if found.last is not None else None
    if last is not None:
        sections.append(Section(WAL_TITLE, last, 3, 1000))
    return ResumeView(folder, sections, step, last, warnings)


def hook_json(context: str) -> str:
    """The JSON Claude Code's SessionStart hook reads from stdout."""
    document = {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
    }
    return json.dumps(document, ensure_ascii=False)
