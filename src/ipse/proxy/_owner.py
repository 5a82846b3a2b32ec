"""Whose proxy answers on a port: proof that a listener is this user's own ipse proxy.

``ipse proxy start`` hands the agent's API key to whatever it finds listening, and ``stop``
signals the pid that listener names, so neither may trust a health document alone: any local user
who binds the port first can write one. `identify` trusts a listener only when every check holds:

- **a secret only this user can read**: ``proxy.key`` in ipse's home (0600 in a 0700 folder, made
  on first use). The health endpoint answers a client's nonce with an HMAC of it, the port the
  request arrived on and the pid of the answering process (`prove`): an impostor cannot compute
  it, and one that relays the nonce to this user's proxy on another port gets back a proof for
  that other port;
- **the socket's owner**: every listening socket on the port (``/proc/net/tcp`` and ``tcp6``)
  belongs to this user;
- **the process**: the pid the health document names is this user's and holds one of those
  listening sockets (its inode among ``/proc/PID/fd``).

Where ``/proc`` is missing (macOS), the secret alone decides. Nothing here imports the HTTP stack.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import itertools
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipse.errors import InputError

SECRET_FILE = "proxy.key"
_NONCE = re.compile(r"[0-9a-f]{16,128}")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's ``st`` column


def secret(home: Path | None = None) -> bytes:
    """This user's proxy secret (``proxy.key`` in ipse's home), made on first use.

    Created whole or not at all (a temporary file linked into place), so two proxies starting at
    once agree on one secret; refused when the file is not this user's or others may read it."""
    if home is None:
        from ipse.home import home_dir

        home = home_dir()
    path = home / SECRET_FILE
    if not path.exists():
        _create(path)
    try:
        info = path.stat()
        data = path.read_bytes().strip()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot read the proxy's secret: {reason}", path=path) from exc
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise InputError("the proxy's secret belongs to another user; remove it", path=path)
    if info.st_mode & 0o077:
        raise InputError("the proxy's secret is readable by others; remove it", path=path)
    if len(data) < 32:
        raise InputError("the proxy's secret is too short; remove it", path=path)
    return data


def _create(path: Path) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)  # fails when another process made it first: theirs stands
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


def new_nonce() -> str:
    """A fresh challenge for a health request."""
    return secrets.token_hex(16)


def prove(key: bytes, nonce: str, port: int, pid: int) -> str | None:
    """The answer to ``nonce`` by the proxy that owns ``key``, listening on ``port`` as ``pid``
    (None for a nonce that is not 16 to 128 lowercase hex digits)."""
    if not _NONCE.fullmatch(nonce):
        return None
    message = f"ipse-proxy\0{nonce}\0{port}\0{pid}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Listener:
    """What `identify` found on a port: the health document (None: no ipse proxy answered, or
    the port is another user's and was not asked), whether it is this user's own proxy, or why
    not; and what holds the port when no proxy of this user's answers there (``holder``: another
    user, by uid, or a process of this user's, by command line and pid; None: nothing listens,
    or the system cannot say)."""

    health: dict[str, Any] | None
    own: bool
    reason: str | None = None
    holder: str | None = None
    other_user: int | None = None  # the uid of another user holding the port
    holder_pid: int | None = None  # the process of this user's that holds it, when known

    @property
    def pid(self) -> int | None:
        pid = self.health.get("pid") if self.health else None
        return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def identify(url: str, port: int, *, timeout: float = 2.0, home: Path | None = None) -> Listener:
    """Ask what answers at ``url`` (on ``port``) and check that it is this user's own proxy.

    A port another user holds is refused before anything is sent to it, and the question takes
    ``timeout`` seconds at most, however slowly the listener answers (`health_document`)."""
    from ipse.proxy._health import health_document

    others = foreign_listeners(port)
    if others:
        holder = f"another user (uid {others[0]})"
        return Listener(None, False, f"port {port} is held by {holder}", holder, others[0])
    nonce = new_nonce()
    health = health_document(url, timeout=timeout, nonce=nonce)
    if health is None:
        held = port_holder(port)
        if held is None:
            return Listener(None, False, "no ipse proxy answers")
        return Listener(None, False, "no ipse proxy answers", held[0], holder_pid=held[1])
    pid = health.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return Listener(health, False, "it names no process")
    expected = prove(secret(home), nonce, port, pid)
    answer = health.get("proof")
    if not isinstance(answer, str) or expected is None or not hmac.compare_digest(answer, expected):
        return Listener(health, False, "it cannot prove it knows this user's proxy secret")
    problem = _holder_problem(pid, port)
    if problem is not None:
        return Listener(health, False, problem)
    return Listener(health, True)


def _proc() -> Path | None:
    proc = Path("/proc")
    return proc if (proc / "net" / "tcp").exists() else None


def _listening(port: int) -> list[tuple[int, int]]:
    """(uid, inode) of every listening TCP socket on ``port`` ([] without ``/proc``)."""
    proc = _proc()
    if proc is None:
        return []
    found: list[tuple[int, int]] = []
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            _, _, hex_port = fields[1].rpartition(":")
            with contextlib.suppress(ValueError):
                if int(hex_port, 16) == port:
                    found.append((int(fields[7]), int(fields[9])))
    return found


def port_holder(port: int) -> tuple[str, int | None] | None:
    """What holds a listening socket on ``port``: in words (another user by uid, or this
    user's process by command line and pid) and that process's pid where it is this user's;
    None when nothing listens there or ``/proc`` is missing."""
    listening = _listening(port)
    if not listening:
        return None
    others = foreign_listeners(port)
    if others:
        return f"another user (uid {others[0]})", None
    proc = _proc()
    inodes = {inode for _, inode in listening}
    for entry in _processes(proc) if proc is not None else ():
        if inodes & _socket_inodes(entry / "fd"):
            return f"{_command(entry)} (pid {entry.name})", int(entry.name)
    return "a process that cannot be named", None


def _processes(proc: Path) -> list[Path]:
    """This user's processes under ``proc``."""
    me = os.getuid()
    found = []
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == me:
                    found.append(Path(entry.path))
    return found


def _command(process: Path, limit: int = 80) -> str:
    """A process's command line, shortened to ``limit`` characters (its name when unreadable)."""
    try:
        argv = (process / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        words = " ".join(a.decode("utf-8", "replace") for a in argv).strip()
    except OSError:
        words = ""
    if not words:
        with contextlib.suppress(OSError):
            words = (process / "comm").read_text().strip()
    words = words or "a process"
    return words if len(words) <= limit else words[: limit - 1] + "…"


def foreign_listeners(port: int) -> list[int]:
    """The uids other than this user's that hold a listening socket on ``port``."""
    if not hasattr(os, "getuid"):
        return []
    me = os.getuid()
    return sorted({uid for uid, _ in _listening(port) if uid != me})


def _holder_problem(pid: int, port: int) -> str | None:
    """Why process ``pid`` is not this user's listener on ``port`` (None: it is, or no /proc)."""
    proc = _proc()
    if proc is None:
        return None
    try:
        owner = (proc / str(pid)).stat().st_uid
    except OSError:
        return f"the process it names ({pid}) does not exist"
    if owner != os.getuid():
        return f"the process it names ({pid}) belongs to another user (uid {owner})"
    inodes = {inode for _, inode in _listening(port)}
    if not inodes:
        return f"nothing listens on port {port}"
    if not inodes & _socket_inodes(proc / str(pid) / "fd"):
        return f"the process it names ({pid}) does not hold the socket on port {port}"
    return None


def _socket_inodes(folder: Path) -> set[int]:
    found: set[int] = set()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        with contextlib.suppress(OSError):
            target = os.readlink(entry.path)
            if target.startswith("socket:["):
                found.add(int(target[8:-1]))
    return found


def proxy_process(pid: int, port: int) -> bool:
    """Whether ``pid`` is this user's ``ipse proxy`` process for ``port`` by its command line
    (for stopping one that no longer answers; False where that cannot be read)."""
    proc = _proc()
    if proc is None:
        return False
    try:
        if (proc / str(pid)).stat().st_uid != os.getuid():
            return False
        argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [a.decode("utf-8", "replace") for a in argv]
    return (
        "ipse" in words
        and "proxy" in words
        and any(a == "--port" and b == str(port) for a, b in itertools.pairwise(words))
    )


__all__ = [
    "SECRET_FILE",
    "Listener",
    "foreign_listeners",
    "identify",
    "new_nonce",
    "port_holder",
    "prove",
    "proxy_process",
    "secret",
]
