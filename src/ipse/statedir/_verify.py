"""``verify``: re-check everything the write-ahead log vouches for, and list each violation.

Checks, in order: the required files are there; the log itself (checksums, an unbroken
sequence, each line chained to the one before, one start); the goal latch (``00_goal.md``
still hashes to what init recorded); the append-only invariants (every recorded prefix of
``10_invariants.md`` still has its length and sha256); the next step (``99_next.md`` matches
its last record); every receipt; a rotated predecessor log, when kept. Torn lines from
interrupted writes, unvouched text appended by hand and stray files are warnings, not
violations.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.fileio import read_bytes
from ipse.statedir import _files as files
from ipse.statedir import _receipts as receipts
from ipse.statedir import _wal as wal


@dataclass
class StateReport:
    """What verification found: violations fail the check, warnings do not."""

    violations: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "violations": self.violations, "warnings": self.warnings}


@dataclass
class LoggedState:
    """What the log says the folder should hold."""

    goal_sha256: str | None = None
    prefixes: list[tuple[int, str, str]] = field(default_factory=list)  # length, sha, label
    next_step: tuple[str, str] | None = None
    receipts: set[str] = field(default_factory=set)
    previous: dict[str, Any] | None = None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_log(scan: wal.Scan, report: StateReport) -> None:
    for bad in scan.bad:
        if bad.torn:
            report.warnings.append(f".wal:{bad.line}: torn line (an interrupted write), ignored")
        else:
            report.violations.append(f".wal:{bad.line}: corrupted line (checksum or format)")
    if not scan.records:
        report.violations.append(".wal holds no valid record")
        return
    first = scan.records[0]
    if first.kind not in ("init", "rotate") or first.seq != 1:
        report.violations.append(
            f".wal:{first.line}: the log does not start with its init or rotate record "
            "(lines removed from the start?)"
        )
    for before, after in zip(scan.records, scan.records[1:], strict=False):
        if after.kind in ("init", "rotate"):
            report.violations.append(f".wal:{after.line}: a second {after.kind} record")
        if after.seq != before.seq + 1:
            report.violations.append(
                f".wal:{after.line}: records {before.seq + 1}..{after.seq - 1} are missing "
                "(lines deleted?)"
            )
        elif after.data.get("prev") != wal.line_hash(before.raw):
            report.violations.append(
                f".wal:{after.line}: does not chain to the line before (a line was edited)"
            )


def logged_state(records: list[wal.Record]) -> LoggedState:
    """Fold the log's records into what the folder should hold."""
    state = LoggedState()
    for record in records:
        data = record.data
        if record.kind in ("init", "rotate"):
            state.goal_sha256 = str(data.get("goal_sha256"))
            state.prefixes = [
                (int(p[0]), str(p[1]), str(p[2]) if len(p) > 2 else "the initial file")
                for p in data.get("prefixes") or []
            ]
            state.receipts = set(data.get("receipts") or [])
            if record.kind == "rotate":
                state.previous = data.get("previous")
        elif record.kind == "invariant":
            label = f"invariant {record.text[:60]!r}"
            state.prefixes.append((int(data["length"]), str(data["sha256"]), label))
        elif record.kind == "stamp":
            state.receipts.add(str(data.get("receipt")))
        step = record.next_step()
        if step is not None:
            state.next_step = step
    return state


def _check_files(folder: Path, state: LoggedState, report: StateReport) -> None:
    goal = folder / files.GOAL
    if goal.is_file() and state.goal_sha256 and _sha(read_bytes(goal)) != state.goal_sha256:
        report.violations.append(f"{files.GOAL} changed after init (the goal is written once)")
    inv = folder / files.INVARIANTS
    if inv.is_file() and state.prefixes:
        data = read_bytes(inv)
        for length, digest, label in state.prefixes:
            if len(data) < length:
                report.violations.append(
                    f"{files.INVARIANTS} is shorter than the WAL recorded after {label} "
                    f"({len(data)} < {length} bytes): text was removed"
                )
                break
            if _sha(data[:length]) != digest:
                report.violations.append(
                    f"{files.INVARIANTS} was rewritten: the text up to {label} no longer "
                    "matches the WAL (it is append-only)"
                )
                break
        else:
            extra = len(data) - state.prefixes[-1][0]
            if extra > 0:
                report.warnings.append(
                    f"{extra} bytes at the end of {files.INVARIANTS} were not added by "
                    "`ipse state invariant` (the WAL does not vouch for them)"
                )
    nxt = folder / files.NEXT
    step = state.next_step
    if nxt.is_file() and step is not None and _sha(read_bytes(nxt)) != step[1]:
        report.violations.append(
            f"{files.NEXT} does not match its last WAL record (the WAL's step: "
            f"{' '.join(step[0].split())[:80]!r})"
        )


def _check_previous(folder: Path, state: LoggedState, report: StateReport) -> None:
    previous = state.previous
    if not isinstance(previous, dict):
        return
    name = str(previous.get("name"))
    path = folder / name
    if not path.is_file():
        report.warnings.append(f"the rotated WAL {name} is gone; its history cannot be re-read")
    elif _sha(read_bytes(path)) != previous.get("sha256"):
        report.violations.append(f"the rotated WAL {name} changed after the rotation")


def verify_state(folder: Path) -> StateReport:
    """Check the state folder; see the module docstring for what is checked."""
    if not folder.is_dir():
        raise InputError("no state folder here (run `ipse state init` first)", path=folder)
    report = StateReport()
    for name in files.REQUIRED:
        if not (folder / name).is_file():
            report.violations.append(f"{name} is missing")
    for odd in files.unexpected_files(folder):
        report.warnings.append(f"{odd.name}: {odd.why}")
    state = LoggedState()
    if (folder / files.WAL).is_file():
        scan = wal.read_all(folder / files.WAL)
        _check_log(scan, report)
        state = logged_state(scan.records)
        _check_files(folder, state, report)
        _check_previous(folder, state, report)
    report.violations.extend(receipts.check_receipts(folder, state.receipts))
    return report
