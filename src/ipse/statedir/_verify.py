"""``verify``: re-check everything the write-ahead log vouches for, and list each violation.

Checks, in order: the required files are there; the log itself (checksums, an unbroken
sequence, each line chained to the one before, one start); the goal latch (``00_goal.md``
still hashes to what init recorded); the append-only invariants (every recorded prefix of
``10_invariants.md`` still has its length and sha256); the next step (``99_next.md`` matches
its last record); every receipt; a rotated predecessor log, when kept; the seal (each
record's HMAC under ipse's key, and the anchor that says how far the log reached when ipse
last wrote it from this home, see `ipse.statedir._seal`). Torn lines from interrupted writes,
text added to the invariants by hand and never explained (it stays flagged, even under later
invariants, until `explain` vouches for it), an unkeyed (older) log and stray files are
warnings. Anything in the folder that is a link, a FIFO, a device or a folder where a file
belongs is a violation, and is never read.

Verification takes the folder lock, so it reads one consistent snapshot rather than a write
in progress; it changes nothing, so a ``next`` killed between its log line and its file is
reported as that (a warning: the next writer finishes it), not as a hand edit. Checking the
invariants hashes the file once, front to back, so the cost is linear in its size whatever
the number of recorded prefixes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.errors import InputError
from ipse.fileio import StrPath
from ipse.statedir import _files as files
from ipse.statedir import _receipts as receipts
from ipse.statedir import _seal as seal
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
    gaps: list[tuple[int, int, str]] = field(default_factory=list)  # start, end, label
    next_step: tuple[str, str] | None = None
    step_before: str | None = None  # sha256 of the step before, when the newest record is `next`
    receipts: set[str] = field(default_factory=set)
    previous: dict[str, Any] | None = None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_chain(scan: wal.Scan, report: StateReport) -> None:
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


def _check_log(scan: wal.Scan, report: StateReport) -> None:
    for first, last, torn in _runs(scan.bad):
        where = f".wal:{first}" if first == last else f".wal:{first}-{last}"
        count = "" if first == last else f"{last - first + 1:,} "
        lines = "line" if first == last else "lines"
        if torn:
            report.warnings.append(f"{where}: {count}torn {lines} (an interrupted write), ignored")
        else:
            report.violations.append(f"{where}: {count}corrupted {lines} (checksum or format)")
    if not scan.records:
        report.violations.append(".wal holds no valid record")
        return
    _check_chain(scan, report)


def _runs(bad: list[wal.BadLine]) -> list[tuple[int, int, bool]]:
    """Bad lines as runs of consecutive lines of one kind, (first, last, torn): a log with
    100,000 garbage lines in a row is one violation saying so, not 100,000."""
    runs: list[tuple[int, int, bool]] = []
    for line in bad:
        number = line.line or 0
        if runs and runs[-1][2] is line.torn and runs[-1][1] + 1 == number:
            runs[-1] = (runs[-1][0], number, line.torn)
        else:
            runs.append((number, number, line.torn))
    return runs


def _check_macs(scan: wal.Scan, key: bytes | None, report: StateReport) -> bool:
    """Check every record's HMAC; True when the log is signed at all."""
    signed = [r for r in scan.records if "mac" in r.data]
    if not signed:
        if scan.records:
            report.warnings.append(
                ".wal is unkeyed (written before ipse signed its log): a rewrite with fresh "
                "checksums cannot be told from the original; the next write starts signing"
            )
        return False
    if key is None:
        report.violations.append(
            ".wal is signed, but this ipse home has no signing key (statedir.key): "
            "the records cannot be checked here"
        )
        return True
    seen_signed = False
    for record in scan.records:
        if "mac" not in record.data:
            if seen_signed:
                report.violations.append(
                    f".wal:{record.line}: an unsigned record after signed ones (forged)"
                )
            continue
        seen_signed = True
        if not wal.signed_by(record.data, key):
            report.violations.append(
                f".wal:{record.line}: not signed with this ipse home's key "
                f"(key {seal.key_id(key)}): forged, or written with another IPSE_HOME"
            )
    return True


def _check_anchor(folder: Path, scan: wal.Scan, signed: bool, report: StateReport) -> None:
    anchor = seal.read_anchor(folder)
    if anchor is None:
        if signed:
            report.warnings.append(
                "ipse never wrote this folder from this home (no anchor): removal of the "
                "newest WAL records cannot be detected here"
            )
        return
    if not scan.records or wal.line_hash(scan.records[0].raw) != anchor.get("first"):
        report.violations.append(
            ".wal is not the log ipse last wrote here: its first record differs from the "
            "anchored one (the log was replaced or rewritten)"
        )
        return
    seq = int(anchor["seq"])
    by_seq = {r.seq: r for r in scan.records}
    record = by_seq.get(seq)
    if record is None:
        report.violations.append(
            f".wal ends at record {scan.records[-1].seq}, but ipse wrote record {seq} here: "
            "the newest records were removed"
        )
    elif wal.line_hash(record.raw) != anchor.get("hash"):
        report.violations.append(
            f".wal:{record.line}: record {seq} is not the one ipse wrote (rewritten)"
        )


def logged_state(records: list[wal.Record]) -> LoggedState:
    """Fold the log's records into what the folder should hold."""
    state = LoggedState()
    for record in records:
        _fold(state, record)
    return state


def _fold(state: LoggedState, record: wal.Record) -> None:
    data = record.data
    if record.kind in ("init", "rotate"):
        state.goal_sha256 = str(data.get("goal_sha256"))
        state.prefixes = [
            (int(p[0]), str(p[1]), str(p[2]) if len(p) > 2 else "the initial file")
            for p in data.get("prefixes") or []
        ]
        state.gaps = [(int(g[0]), int(g[1]), str(g[2])) for g in data.get("gaps") or []]
        state.receipts = set(data.get("receipts") or [])
        if record.kind == "rotate":
            state.previous = data.get("previous")
    elif record.kind == "invariant":
        label = f"invariant {record.text[:60]!r}"
        end = state.prefixes[-1][0] if state.prefixes else 0
        start = int(data.get("start", end))
        if start > end:
            state.gaps.append((end, start, label))
        state.prefixes.append((int(data["length"]), str(data["sha256"]), label))
    elif record.kind == "vouch":
        state.gaps = []
        label = f"the explanation {record.text[:60]!r}"
        state.prefixes.append((int(data["length"]), str(data["sha256"]), label))
    elif record.kind == "stamp":
        state.receipts.add(str(data.get("receipt")))
    step = record.next_step()
    if step is not None:
        before = state.next_step
        state.next_step = step
        state.step_before = before[1] if before is not None and record.kind == "next" else None
    else:
        state.step_before = None


def _read(folder: Path, name: str, report: StateReport) -> bytes | None:
    try:
        return files.read_bytes(folder / name)
    except files.NotRegular as exc:
        report.violations.append(f"{name} is {exc.what}, not a regular file: not read")
        return None


def _check_prefixes(data: bytes, state: LoggedState, report: StateReport) -> None:
    """Every recorded prefix, hashed in one pass over the file (linear, however many)."""
    hasher = hashlib.sha256()
    done = 0
    view = memoryview(data)
    for length, digest, label in sorted(state.prefixes, key=lambda p: p[0]):
        if len(data) < length:
            report.violations.append(
                f"{files.INVARIANTS} is shorter than the WAL recorded after {label} "
                f"({len(data)} < {length} bytes): text was removed"
            )
            return
        hasher.update(view[done:length])
        done = length
        if hasher.copy().hexdigest() != digest:
            report.violations.append(
                f"{files.INVARIANTS} was rewritten: the text up to {label} no longer "
                "matches the WAL (it is append-only)"
            )
            return
    for start, end, label in state.gaps:
        report.warnings.append(
            f"bytes {start}..{end} of {files.INVARIANTS}, before {label}, were not added by "
            "`ipse state invariant` and were never explained "
            "(`ipse state invariant --explain REASON` vouches for them)"
        )
    extra = len(data) - max(p[0] for p in state.prefixes)
    if extra > 0:
        report.warnings.append(
            f"{extra} bytes at the end of {files.INVARIANTS} were not added by "
            "`ipse state invariant` (the WAL does not vouch for them; "
            "`ipse state invariant --explain REASON` does)"
        )


def _check_files(folder: Path, state: LoggedState, report: StateReport) -> None:
    goal = _read(folder, files.GOAL, report)
    if goal is not None and state.goal_sha256 and _sha(goal) != state.goal_sha256:
        report.violations.append(f"{files.GOAL} changed after init (the goal is written once)")
    inv = _read(folder, files.INVARIANTS, report)
    if inv is not None and state.prefixes:
        _check_prefixes(inv, state, report)
    nxt = _read(folder, files.NEXT, report)
    step = state.next_step
    if nxt is not None and step is not None and _sha(nxt) == state.step_before:
        report.warnings.append(
            f"{files.NEXT} still holds the step before the last WAL record: an interrupted "
            "`ipse state next`, which the next command that writes finishes"
        )
    elif nxt is not None and step is not None and _sha(nxt) != step[1]:
        report.violations.append(
            f"{files.NEXT} does not match its last WAL record (the WAL's step: "
            f"{' '.join(step[0].split())[:80]!r})"
        )


def _check_previous(folder: Path, state: LoggedState, report: StateReport) -> None:
    previous = state.previous
    if not isinstance(previous, dict):
        return
    name = str(previous.get("name"))
    if files.odd_kind(folder / name) is not None:
        report.violations.append(f"the rotated WAL {name} is not a regular file")
        return
    data = files.read_bytes(folder / name)
    if data is None:
        report.warnings.append(f"the rotated WAL {name} is gone; its history cannot be re-read")
    elif _sha(data) != previous.get("sha256"):
        report.violations.append(f"the rotated WAL {name} changed after the rotation")


def verify_state(folder: StrPath) -> StateReport:
    """Check the state folder; see the module docstring for what is checked.

    The folder lock is held; a folder ipse cannot write to (a read-only checkout) is read
    without it, with a warning.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no state folder here (run `ipse state init` first)", path=folder)
    report = StateReport()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(files.locked(folder))
        except InputError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, OSError) and cause.errno in (errno.EACCES, errno.EROFS)):
                raise
            report.warnings.append("read without the folder lock (no write access to it)")
        _verify_locked(folder, report)
    return report


def _verify_locked(folder: Path, report: StateReport) -> None:
    if files.is_regular(folder / files.PENDING_INIT):
        report.warnings.append("an interrupted `ipse state init`; the next command finishes it")
    for name in files.REQUIRED:
        what = files.odd_kind(folder / name)
        if what is not None:
            report.violations.append(f"{name} is {what}, not a regular file: not read")
        elif not files.is_regular(folder / name):
            report.violations.append(f"{name} is missing")
    for odd in files.unexpected_files(folder):
        if odd.name in files.REQUIRED:
            continue
        line = f"{odd.name}: {odd.why}"
        if files.is_state_file(odd.name) and "not a regular file" in odd.why:
            report.violations.append(line)
        else:
            report.warnings.append(line)
    state = LoggedState()
    if files.is_regular(folder / files.WAL):
        scan = wal.read_all(folder / files.WAL)
        _check_log(scan, report)
        signed = _check_macs(scan, seal.load_key(), report)
        _check_anchor(folder, scan, signed, report)
        state = logged_state(scan.records)
        _check_files(folder, state, report)
        _check_previous(folder, state, report)
    problems, notes = receipts.review_receipts(folder, state.receipts)
    report.violations.extend(problems)
    report.warnings.extend(notes)
