"""Receipts: a claim bound to the sha256 of each artifact and, optionally, to git HEAD.

A claim is a request; an artifact is the constraint. ``stamp`` hashes the artifacts, records
HEAD and whether the tree was dirty, and stores the receipt as one JSON line in
``.receipts.jsonl`` whose ``id`` is the sha256 of its content; the WAL records that id, so a
receipt written by hand (a forged claim) or edited later is recognised. `check_receipts`
re-hashes every artifact, and with git checks that the recorded commit still exists and is an
ancestor of HEAD (history not rewritten) and, for a clean tree, that the commit holds the very
bytes the receipt names. A ``--git`` receipt whose commit is no longer HEAD is noted (the claim
was vouched for at that commit, not at HEAD) without failing the check: receipts accumulate
as the work goes on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError, UsageError
from ipse.fileio import StrPath, sha256_of
from ipse.statedir import _files as files
from ipse.statedir import _gitinfo as gitinfo
from ipse.statedir import _json as state_json
from ipse.statedir import _wal as wal
from ipse.statedir._ops import writing


def receipt_id(body: dict[str, Any]) -> str:
    """The content address of a receipt body (everything but ``id``)."""
    clean = {k: v for k, v in body.items() if k != "id"}
    canonical = json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _stored_path(root: Path, artifact: Path) -> str:
    full = artifact.resolve()
    try:
        return full.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(full)


def make_receipt(folder: Path, claim: str, artifacts: list[Path], use_git: bool) -> dict[str, Any]:
    """A receipt for ``claim`` over ``artifacts`` (not yet stored)."""
    if not claim.strip():
        raise UsageError("the claim is empty")
    if not artifacts:
        raise UsageError("a receipt needs at least one --artifact")
    root = files.project_root(folder)
    entries = []
    for artifact in artifacts:
        digest, size = sha256_of(artifact)
        entries.append({"path": _stored_path(root, artifact), "sha256": digest, "bytes": size})
    git: dict[str, Any] | None = None
    if use_git:
        head = gitinfo.head_commit(root)
        if head is None:
            raise UsageError(f"--git: {root} is not in a git repository with a commit")
        git = {"head": head, "dirty": gitinfo.is_dirty(root)}
    body: dict[str, Any] = {
        "claim": claim.strip(),
        "t": wal.utc_now(),
        "artifacts": entries,
        "git": git,
    }
    return {"id": receipt_id(body), **body}


def stamp(
    folder: StrPath, claim: str, artifacts: Sequence[StrPath], use_git: bool = False
) -> dict[str, Any]:
    """Make a receipt, log its id, and store it in ``.receipts.jsonl``."""
    folder = Path(folder)
    paths = [Path(a) for a in artifacts]
    files.require_folder(folder)
    receipt = make_receipt(folder, claim, paths, use_git)
    with writing(folder):
        wal.append(
            folder / files.WAL,
            wal.new_body(
                "stamp",
                receipt["claim"],
                gitinfo.short_revision(files.project_root(folder)),
                receipt=receipt["id"],
            ),
        )
        line = json.dumps(receipt, sort_keys=True, ensure_ascii=True) + "\n"
        files.append_fsync(folder / files.RECEIPTS, line.encode("ascii"))
    return receipt


@dataclass(frozen=True)
class StoredReceipt:
    """One line of ``.receipts.jsonl``: its number and its receipt, or None when unreadable."""

    line: int
    receipt: dict[str, Any] | None


def load(folder: Path) -> list[StoredReceipt]:
    """Every receipt line in the folder (an empty list when there is no receipts file)."""
    data = files.read_bytes(folder / files.RECEIPTS)
    if data is None:
        return []
    out = []
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = state_json.loads(raw)
        except ValueError:
            data = None
        out.append(StoredReceipt(number, data if isinstance(data, dict) else None))
    return out


def _check_artifacts(root: Path, receipt: dict[str, Any], where: str) -> list[str]:
    problems = []
    git = receipt.get("git")
    head = git.get("head") if isinstance(git, dict) else None
    clean = isinstance(git, dict) and git.get("dirty") is False
    artifacts = receipt.get("artifacts")
    if not isinstance(artifacts, list) or not all(isinstance(e, dict) for e in artifacts):
        return [f"{where}: not a receipt (its artifacts are not a list of objects)"]
    for entry in artifacts:
        rel = str(entry.get("path"))
        path = Path(rel) if os.path.isabs(rel) else root / rel
        try:  # a regular file only: the receipt may come from someone else's repository
            digest, _ = sha256_of(path)
        except InputError as exc:
            problems.append(
                f"{where}: artifact {rel} is missing"
                if not os.path.lexists(path)
                else f"{where}: artifact {rel} cannot be checked ({exc.detail})"
            )
            continue
        if digest != entry.get("sha256"):
            problems.append(f"{where}: artifact {rel} changed since the claim was stamped")
        if clean and isinstance(head, str) and not os.path.isabs(rel):
            blob = gitinfo.blob_at(root, head, f"./{rel}")
            if blob is not None and hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
                problems.append(
                    f"{where}: the receipt says the tree was clean at {head[:7]}, but {rel} "
                    "there has other bytes (forged claim)"
                )
    return problems


def _check_git(root: Path, receipt: dict[str, Any], where: str) -> tuple[list[str], list[str]]:
    """Problems with the receipt's commit, and a note when HEAD has moved on since."""
    git = receipt.get("git")
    if not isinstance(git, dict):
        return [], []
    head = str(git.get("head"))
    if not gitinfo.commit_exists(root, head):
        return [f"{where}: commit {head[:7]} no longer exists (history rewritten?)"], []
    if not gitinfo.is_ancestor(root, head):
        return [f"{where}: commit {head[:7]} is not an ancestor of HEAD (history rewritten)"], []
    now = gitinfo.head_commit(root)
    if now is None or now == head:
        return [], []
    later = gitinfo.commits_between(root, head, now)
    count = f"{later} commit{'s' if later != 1 else ''} later" if later is not None else "later"
    return [], [
        f"{where}: stamped at {head[:7]}; HEAD is now {now[:7]} ({count}): the claim was "
        "vouched for there, not at HEAD (stamp again to vouch for HEAD)"
    ]


def review_receipts(folder: Path, logged: set[str]) -> tuple[list[str], list[str]]:
    """The problems with the folder's receipts and the notes on them (HEAD moved on since a
    ``--git`` stamp); ``logged`` holds the ids the WAL recorded."""
    root = files.project_root(folder)
    problems: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for stored in load(folder):
        where = f"{files.RECEIPTS}:{stored.line}"
        receipt = stored.receipt
        if receipt is None:
            problems.append(f"{where}: not a receipt (unreadable JSON)")
            continue
        claim = str(receipt.get("claim", "?"))
        where = f"{where} ({claim!r})"
        if receipt.get("id") != receipt_id(receipt):
            problems.append(f"{where}: edited after stamping (its id does not match its content)")
            continue
        seen.add(str(receipt["id"]))
        if receipt["id"] not in logged:
            problems.append(f"{where}: not recorded in the WAL (not made by `ipse state stamp`)")
        problems.extend(_check_artifacts(root, receipt, where))
        git_problems, git_notes = _check_git(root, receipt, where)
        problems.extend(git_problems)
        notes.extend(git_notes)
    for missing in sorted(logged - seen):
        problems.append(
            f"receipt {missing[:12]} recorded in the WAL is missing from {files.RECEIPTS}"
        )
    return problems, notes


def check_receipts(folder: StrPath, logged: set[str]) -> list[str]:
    """Every problem with the folder's receipts; ``logged`` holds the ids the WAL recorded."""
    return review_receipts(Path(folder), logged)[0]
