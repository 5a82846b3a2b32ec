"""A TCP relay in front of a real PostgreSQL server that has the server terminate one
connection (``pg_terminate_backend``) at a chosen moment of a chosen statement.

The relay reads the server's side of the wire protocol message by message (it learns each
connection's backend pid from BackendKeyData). Armed with a marker (bytes the client's message
holds: a statement's text or its prepared name), it cuts the next connection that sends it:

- ``"after-commit"``: the client's messages go through, and the server's replies until the
  one that says the transaction committed (``COMMIT`` done, or ReadyForQuery back to "idle"
  after an implicit transaction); that one is withheld, the backend is terminated, and the
  client gets only the server's FATAL ``57P01``, as when a termination lands between the
  commit and the reply;
- ``"before"``: the client's message is not sent; the backend is terminated first, so nothing
  of the statement ran.

A cut fires once; later connections pass untouched.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class CutRelay:
    """``url``: the server's URL rewritten to pass through the relay."""

    def __init__(self, server_url: str) -> None:
        parts = urlsplit(server_url)
        self.server = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.admin_url = server_url
        self.port = _free_port()
        query = [*parse_qsl(parts.query), ("sslmode", "disable"), ("gssencmode", "disable")]
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        self.url = urlunsplit(
            parts._replace(
                netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host,
                query=urlencode(query),
            )
        )
        self._marker: bytes | None = None
        self._mode = ""
        self._lock = threading.Lock()
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker: bytes, mode: str) -> None:
        assert mode in ("after-commit", "before")
        with self._lock:
            self._marker, self._mode = marker, mode

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self._listener.close()

    def _take(self, chunk: bytes) -> str:
        """The cut to make for a client chunk holding the armed marker ("" for none)."""
        with self._lock:
            if self._marker is None or self._marker not in chunk:
                return ""
            self._marker = None
            self.cuts += 1
            return self._mode

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.server)
            _Connection(self, client, server).start()

    def terminate(self, pid: int) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


class _Connection:
    def __init__(self, relay: CutRelay, client: socket.socket, server: socket.socket) -> None:
        self.relay, self.client, self.server = relay, client, server
        self.pid = 0
        self.holding = False  # the server's reply is held (an after-commit cut is under way)
        self.pid_known = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._client_to_server, daemon=True).start()
        threading.Thread(target=self._server_to_client, daemon=True).start()

    def _client_to_server(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := self.client.recv(65536):
                cut = self.relay._take(chunk)
                if cut == "before":
                    self.pid_known.wait(10)
                    self.relay.terminate(self.pid)
                    return  # the chunk is never sent
                if cut == "after-commit":
                    self.holding = True
                self.server.sendall(chunk)
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_WR)

    def _server_to_client(self) -> None:
        cut = False  # terminated: only the server's own last words go through
        with contextlib.suppress(OSError):
            for kind, message in _messages(self.server):
                if kind == b"K":
                    self.pid = struct.unpack("!I", message[5:9])[0]
                    self.pid_known.set()
                if cut and kind != b"E":
                    continue
                if self.holding and _committed(kind, message):
                    self.holding, cut = False, True
                    self.relay.terminate(self.pid)
                    continue
                self.client.sendall(message)
        for sock in (self.client, self.server):  # shutdown: wakes the other thread's recv
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


def _committed(kind: bytes, message: bytes) -> bool:
    """Whether a server message says the transaction under way has committed: a transaction
    block's ``COMMIT`` done, or ReadyForQuery back to "idle" after a statement's implicit
    transaction."""
    if kind == b"C":
        return message[5:].startswith(b"COMMIT")
    return kind == b"Z" and message[5:6] == b"I"


def _messages(sock: socket.socket) -> Iterator[tuple[bytes, bytes]]:
    """The server's messages as (type byte, whole message)."""
    buffer = b""
    while True:
        while len(buffer) >= 5:
            (length,) = struct.unpack("!I", buffer[1:5])
            if len(buffer) < 1 + length:
                break
            message, buffer = buffer[: 1 + length], buffer[1 + length :]
            yield message[:1], message
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk


@contextlib.contextmanager
def cut_relay(server_url: str) -> Iterator[CutRelay]:
    relay = CutRelay(server_url)
    try:
        yield relay
    finally:
        relay.close()


__all__ = ["CutRelay", "cut_relay"]
