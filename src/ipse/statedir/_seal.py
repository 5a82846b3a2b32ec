"""The log's seal: a secret key that signs every WAL record, and an anchor kept outside the folder.

A checksum and a hash chain catch accidents, but anyone can recompute them: a whole log
rewritten with fresh checksums would pass. So each record also carries ``mac``, an
HMAC-SHA256 of its canonical body (``prev`` included, so the chain is keyed) under a secret
kept in ipse's home (``statedir.key``, mode 0600, created on first use). And because removing
the newest records leaves a shorter log that is still perfectly chained, every write also
records the newest record it made (its ``seq`` and line hash, and the hash of the log's first
line) in an anchor file in ipse's home, named after the state folder's real path; ``verify``
checks the log still reaches that record. Neither lives in the repository, so a hostile
repository can edit the folder but not the seal.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ipse._sha256 import sha256
from ipse.errors import InputError
from ipse.fileio import atomic_write
from ipse.home import home_dir
from ipse.statedir import _json as state_json

TYPE_CHECKING = False  # (no `typing` on the SessionStart hook's path: docs/development.md)
if TYPE_CHECKING:
    from typing import Any

KEY_FILE = "statedir.key"
ANCHORS = "statedir-anchors"
MAC_CHARS = 32


def _key_path() -> Path:
    return home_dir(create=False) / KEY_FILE


def load_key() -> bytes | None:
    """The signing key, or None when this ipse home has none yet (never created here)."""
    try:
        text = _key_path().read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the state signing key: {exc}", path=_key_path()) from exc
    try:
        return bytes.fromhex(text)
    except ValueError as exc:
        raise InputError("the state signing key is not hex", path=_key_path()) from exc


def key() -> bytes:
    """The signing key, created (0600, atomically: written aside, then linked) on first use."""
    found = load_key()
    if found is not None:
        return found
    folder = home_dir(create=True)
    path = folder / KEY_FILE
    tmp = folder / f".{KEY_FILE}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            import secrets  # (made once per home: not on the hook's path)

            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
            os.link(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot create the state signing key: {exc}", path=path) from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    made = load_key()
    if made is None:
        raise InputError("the state signing key vanished after it was created", path=path)
    return made


def key_id(secret: bytes) -> str:
    """A short public name for a key (messages only)."""
    return sha256(b"ipse key id\0" + secret).hexdigest()[:8]


def mac(secret: bytes, canonical: bytes) -> str:
    """The HMAC of one record's canonical body."""
    import hashlib  # (here: a record is signed or checked, which the hook never does)
    import hmac

    return hmac.new(secret, canonical, hashlib.sha256).hexdigest()[:MAC_CHARS]


def mac_ok(secret: bytes, canonical: bytes, claimed: str) -> bool:
    import hmac

    return hmac.compare_digest(mac(secret, canonical), claimed)


def _anchor_path(folder: Path, create: bool) -> Path:
    real = os.path.realpath(folder)
    name = sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return home_dir(create=create) / ANCHORS / f"{name}.json"


def write_anchor(folder: Path, first_hash: str, seq: int, last_hash: str) -> None:
    """Record the newest record ipse wrote to this folder's log (caller holds the lock)."""
    body = {
        "folder": os.path.realpath(folder),
        "first": first_hash,
        "seq": seq,
        "hash": last_hash,
    }
    path = _anchor_path(folder, create=True)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    atomic_write(path, json.dumps(body, sort_keys=True) + "\n", mode=0o600)


def read_anchor(folder: Path) -> dict[str, Any] | None:
    """The anchor of this folder's log, or None when ipse never wrote it from this home."""
    path = _anchor_path(folder, create=False)
    try:
        data = state_json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the log's anchor: {exc}", path=path) from exc
    if not isinstance(data, dict) or not isinstance(data.get("seq"), int):
        raise InputError("the log's anchor is not an anchor", path=path)
    return data
