"""``rotate``: start a new write-ahead log that carries what verification needs from the old.

The new log's first line (kind ``rotate``) holds the goal latch, every recorded invariant
prefix, the current next step, the ids of the receipts, and the old log's name, line count
and sha256. The old log is kept beside it as ``.wal.NNNN`` (a hard link made before the swap),
and the swap itself is one atomic rename, so a crash leaves either the old log or the new one
in place, never none.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ipse.errors import UsageError
from ipse.fileio import StrPath, fsync_dir
from ipse.statedir import _files as files
from ipse.statedir import _wal as wal
from ipse.statedir._gitinfo import short_revision
from ipse.statedir._ops import writing
from ipse.statedir._verify import logged_state


def _next_name(folder: Path) -> str:
    rotated = files.rotated_wals(folder)
    number = int(rotated[-1].rsplit(".", 1)[1]) + 1 if rotated else 1
    return f"{files.WAL}.{number:04d}"


def rotate(folder: StrPath) -> tuple[str, wal.Record]:
    """Rotate the log; returns the old log's new name and the new log's first record."""
    folder = Path(folder)
    files.require_folder(folder)
    path = folder / files.WAL
    with writing(folder):
        scan = wal.read_all(path)
        state = logged_state(scan.records)
        if state.goal_sha256 is None or state.next_step is None:
            raise UsageError(f"{path}: the log has no valid init record; it cannot be rotated")
        old = files.need_bytes(path)
        name = _next_name(folder)
        try:
            os.link(path, folder / name)
        except OSError:
            import shutil  # here, not at the top: a SessionStart hook imports this package

            shutil.copyfile(path, folder / name)
        fsync_dir(folder)
        body = wal.new_body(
            "rotate",
            f"new log; the previous one is kept as {name}",
            short_revision(files.project_root(folder)),
            goal_sha256=state.goal_sha256,
            prefixes=[list(p) for p in state.prefixes],
            gaps=[list(g) for g in state.gaps],
            next_text=state.next_step[0],
            next_sha256=state.next_step[1],
            receipts=sorted(state.receipts),
            previous={
                "name": name,
                "sha256": hashlib.sha256(old).hexdigest(),
                "lines": scan.records[-1].seq if scan.records else 0,
            },
        )
        line = wal.first_line(body)
        files.write_file(path, line)
        raw = line.rstrip(b"\n")
        wal.anchor(path, wal.Record(wal.decode(raw) or {}, raw, 1))
    return name, wal.Record(wal.decode(raw) or {}, raw, 1)
