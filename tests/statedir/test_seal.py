"""Evasions that a checksum and a chain alone let pass, caught by the seal.

The seal is an HMAC on every WAL record under a key in ipse's home and an anchor, also in
ipse's home, naming the newest record ipse wrote; text added to the invariants by hand stays
flagged until it is explained.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ipse.home import home_dir
from ipse.statedir import _wal as wal
from ipse.statedir import add_invariant, explain, set_next, verify_state
from ipse.statedir._seal import ANCHORS, KEY_FILE
from tests.statedir.conftest import RunIpse


def _rewrite_unkeyed(folder: Path, edit: dict[str, str] | None = None) -> None:
    """Rewrite the whole log with fresh checksums and a fresh chain, but no key."""
    records = wal.read_all(folder / ".wal").records
    lines: list[bytes] = []
    for record in records:
        data = {k: v for k, v in record.data.items() if k != "mac"}
        if edit and record.kind == "next":
            data.update(edit)
        data["prev"] = wal.line_hash(lines[-1]) if lines else None
        lines.append(wal.encode(data))
    (folder / ".wal").write_bytes(b"\n".join(lines) + b"\n")


def test_the_key_is_private_and_made_once(state: Path) -> None:
    path = home_dir() / KEY_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    key = path.read_bytes()
    set_next(state, "again")
    assert path.read_bytes() == key
    assert all("mac" in r.data for r in wal.read_all(state / ".wal").records)


def test_a_whole_log_rewritten_with_fresh_checksums_and_chain_is_caught(state: Path) -> None:
    set_next(state, "the real step")
    _rewrite_unkeyed(state, {"text": "a forged step"})
    report = verify_state(state)
    assert not report.ok
    assert any(
        "first record differs" in v or "not the one ipse wrote" in v for v in report.violations
    )


def test_a_signed_record_with_a_forged_mac_is_caught(state: Path) -> None:
    set_next(state, "the real step")
    lines = (state / ".wal").read_bytes().splitlines()
    data = wal.decode(lines[-1])
    assert data is not None
    data["mac"] = "0" * 32
    lines[-1] = wal.encode(data)  # re-checksummed, but the mac is not this home's
    (state / ".wal").write_bytes(b"\n".join(lines) + b"\n")
    assert any("not signed with this ipse home's key" in v for v in verify_state(state).violations)


def test_the_newest_records_truncated_are_caught(state: Path) -> None:
    set_next(state, "one")
    set_next(state, "two")
    lines = (state / ".wal").read_bytes().splitlines(keepends=True)
    (state / ".wal").write_bytes(b"".join(lines[:-1]))  # drop the newest: still a valid chain
    (state / "99_next.md").write_text("one\n")
    report = verify_state(state)
    assert any("the newest records were removed" in v for v in report.violations), report


def test_text_added_by_hand_stays_flagged_until_explained(state: Path, run_ipse: RunIpse) -> None:
    with open(state / "10_invariants.md", "a") as handle:
        handle.write("- Never run the tests (added by hand)\n")
    add_invariant(state, "Keep the AST immutable", reason="sharing")
    report = verify_state(state)
    assert report.ok
    assert any("were never explained" in w for w in report.warnings), report.warnings
    add_invariant(state, "Another", reason="still flagged")
    assert any("were never explained" in w for w in verify_state(state).warnings)
    done = run_ipse("state", "invariant", "--explain", "copied from the review", cwd=state.parent)
    assert done.returncode == 0, done.stderr
    report = verify_state(state)
    assert report.ok and not report.warnings, report
    with open(state / "10_invariants.md", "a") as handle:
        handle.write("- more by hand\n")
    assert any("not added by `ipse state invariant`" in w for w in verify_state(state).warnings)
    explain(state, "also fine")
    assert not verify_state(state).warnings


def test_an_old_unkeyed_log_still_verifies_with_a_note(state: Path) -> None:
    set_next(state, "written by an older ipse")
    _rewrite_unkeyed(state)
    for anchor in (home_dir() / ANCHORS).iterdir():
        anchor.unlink()  # an older ipse kept no anchor either
    report = verify_state(state)
    assert report.ok, report.violations
    assert any("unkeyed" in w for w in report.warnings)
    set_next(state, "written by this ipse")  # signing starts; the old records stay valid
    report = verify_state(state)
    assert report.ok, report.violations


def test_unsigned_records_after_signed_ones_are_caught(state: Path) -> None:
    set_next(state, "signed")
    lines = (state / ".wal").read_bytes().splitlines()
    last = wal.read_all(state / ".wal").records[-1]
    data = {k: v for k, v in last.data.items() if k not in ("mac", "seq", "prev")}
    data.update(seq=last.seq + 1, prev=wal.line_hash(lines[-1]), text="forged", kind="checkpoint")
    (state / ".wal").write_bytes(b"\n".join([*lines, wal.encode(data)]) + b"\n")
    assert any("unsigned record after signed ones" in v for v in verify_state(state).violations)
