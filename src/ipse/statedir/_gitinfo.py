"""What the state folder needs from git: HEAD, whether the tree is dirty, and ancestry.

HEAD is read straight from the repository's files (``HEAD``, loose refs, ``packed-refs``,
worktree ``commondir``), because ``next`` records the short revision on every call and spawning
``git`` would cost more than the rest of ``next``. Anything unusual falls back to ``git
rev-parse``. Dirtiness, ancestry and blob lookups run ``git`` itself; they are only needed by
``stamp --git`` and ``verify``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

NO_GIT = "no-git"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def _git_dir(start: Path) -> Path | None:
    folder = str(start)
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return Path(dot)
        if os.path.isfile(dot):
            with open(dot, encoding="utf-8", errors="replace") as handle:
                text = handle.read().strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                return target if target.is_absolute() else (Path(folder) / target).resolve()
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _read_ref(common: Path, ref: str) -> str | None:
    loose = common / ref
    if loose.is_file():
        value = loose.read_text(encoding="ascii", errors="replace").strip()
        return value if _SHA.match(value) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split(" ", 1)
            if len(parts) == 2 and parts[1] == ref and _SHA.match(parts[0]):
                return parts[0]
    return None


def _rev_parse(start: Path) -> str | None:
    import subprocess  # here, not at the top: a SessionStart hook imports this package

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"],
            cwd=start,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and _SHA.match(value) else None


def head_commit(start: Path) -> str | None:
    """The full commit id of HEAD for the repository holding ``start``; None without one."""
    try:
        git_dir = _git_dir(Path(os.path.abspath(start)))
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if _SHA.match(head):
            return head
        if not head.startswith("ref:"):
            return _rev_parse(start)
        common = git_dir
        commondir = git_dir / "commondir"
        if commondir.is_file():
            common = (git_dir / commondir.read_text(encoding="utf-8").strip()).resolve()
        ref = head[len("ref:") :].strip()
        found = _read_ref(common, ref) or (_read_ref(git_dir, ref) if common != git_dir else None)
        if found is not None:
            return found
        if (common / "reftable").exists():
            return _rev_parse(start)
        return None  # an unborn branch: no commit yet
    except OSError:
        return _rev_parse(start)


def short_revision(start: Path) -> str:
    """HEAD's short revision (7 hex digits), or ``no-git`` outside a repository or before
    the first commit."""
    commit = head_commit(start)
    return commit[:7] if commit else NO_GIT


def _git(start: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=start, capture_output=True, check=False)
    except OSError:
        return None


def is_dirty(start: Path) -> bool:
    """Whether the working tree has changes or untracked files (``git status --porcelain``)."""
    done = _git(start, "status", "--porcelain")
    return bool(done is not None and done.returncode == 0 and done.stdout.strip())


def commit_exists(start: Path, commit: str) -> bool:
    """Whether ``commit`` names a commit in the repository."""
    done = _git(start, "cat-file", "-e", f"{commit}^{{commit}}")
    return done is not None and done.returncode == 0


def is_ancestor(start: Path, commit: str, of: str = "HEAD") -> bool:
    """Whether ``commit`` is ``of`` or one of its ancestors (history not rewritten)."""
    done = _git(start, "merge-base", "--is-ancestor", commit, of)
    return done is not None and done.returncode == 0


def commits_between(start: Path, older: str, newer: str) -> int | None:
    """How many commits ``newer`` is ahead of ``older`` (None when git cannot say)."""
    done = _git(start, "rev-list", "--count", f"{older}..{newer}")
    if done is None or done.returncode != 0:
        return None
    try:
        return int(done.stdout.strip())
    except ValueError:
        return None


def blob_at(start: Path, commit: str, relpath: str) -> bytes | None:
    """The bytes of ``relpath`` at ``commit``, or None when the commit does not hold it."""
    done = _git(start, "cat-file", "blob", f"{commit}:{relpath}")
    if done is None or done.returncode != 0:
        return None
    return done.stdout
