"""Asking what answers on a port: one ``GET /ipse/health`` with a deadline for the whole exchange.

``ipse proxy start | stop | status`` and the hook that starts the proxy ask this before anything
else, so none of them may wait longer than they said: a listener that accepts and then drips its
answer a byte a second would keep a per-read timeout waiting forever (each read gets its byte in
time). The request here is plain HTTP/1.1 on a socket of its own, every read given only what is
left of the deadline, and the answer read up to `HEALTH_BYTES`. Nothing here imports the HTTP
stack, and no proxy from the environment is used: the question is what listens on this address.
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from ipse import jsonio

HEALTH_PATH = "/ipse/health"
HEALTH_BYTES = 65536  # the most of an answer read (a health document is under a kilobyte)


def health_document(
    url: str, timeout: float = 2.0, *, nonce: str | None = None
) -> dict[str, Any] | None:
    """The health document of whatever answers at ``url`` as an ipse proxy within ``timeout``
    seconds (connecting, asking and reading the whole answer), or None.

    It says nothing about whose process that is (any local user may answer so): before trusting
    or signalling it, ask `ipse.proxy.identify`, which sends a ``nonce`` the proxy must prove."""
    query = f"?nonce={nonce}" if nonce else ""
    answer = http_get(f"{url}{HEALTH_PATH}{query}", timeout)
    if answer is None or answer[0] != 200:
        return None
    try:
        document = jsonio.loads(answer[1])
    except (jsonio.JSONDecodeError, ValueError):
        return None
    if isinstance(document, dict) and document.get("service") == "ipse-proxy":
        return document
    return None


def http_get(url: str, timeout: float) -> tuple[int, bytes] | None:
    """The status and body of ``GET url`` (plain HTTP), the whole exchange within ``timeout``
    seconds; None when it fails, is not HTTP, is longer than `HEALTH_BYTES` or takes longer."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    host, port = parts.hostname, parts.port or 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    shown = f"[{host}]" if ":" in host else host
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {shown}:{port}\r\nAccept: application/json\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    deadline = time.monotonic() + timeout
    data = bytearray()
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            _within(sock, deadline)
            sock.sendall(request)
            while len(data) <= HEALTH_BYTES:
                _within(sock, deadline)
                chunk = sock.recv(HEALTH_BYTES)
                if not chunk:
                    return _answer(bytes(data), closed=True)
                data += chunk
                found = _answer(bytes(data), closed=False)
                if found is not None:
                    return found
    except (OSError, ValueError, UnicodeError):
        return None
    return None


def _within(sock: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the health request ran out of time")
    sock.settimeout(left)


def _answer(data: bytes, *, closed: bool) -> tuple[int, bytes] | None:
    """The status and body of a whole HTTP response in ``data`` (None: not whole yet; with
    ``closed``, the connection ended, so what there is is all there will be)."""
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator:
        return None
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split(" ", 2)
    if len(words) < 2 or not words[0].startswith("HTTP/") or not words[1].isdigit():
        raise ValueError("not an HTTP response")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    status = int(words[1])
    if "chunked" in headers.get("transfer-encoding", "").lower():
        whole = _unchunked(body)
        return (status, whole) if whole is not None else None
    length = headers.get("content-length")
    if length is not None and length.isdigit():
        return (status, body[: int(length)]) if len(body) >= int(length) else None
    return (status, body) if closed else None


def _unchunked(body: bytes) -> bytes | None:
    """A chunked body decoded, or None while its last chunk has not come."""
    out = bytearray()
    at = 0
    while True:
        line_end = body.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = 0
        with contextlib.suppress(ValueError):
            size = int(body[at:line_end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        start = line_end + 2
        if len(body) < start + size + 2:
            return None
        out += body[start : start + size]
        at = start + size + 2


__all__ = ["HEALTH_BYTES", "HEALTH_PATH", "health_document", "http_get"]
