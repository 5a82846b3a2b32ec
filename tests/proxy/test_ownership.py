"""``ipse proxy start | stop | status`` trust only this user's own proxy: an impostor process that
binds the port first and answers ``/ipse/health`` as an ipse proxy is refused (exit 1, the reason
said), never reported as running (the agent's API key would go to it), never signalled, and
neither is the process it names."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ipse.proxy._owner import SECRET_FILE, identify, prove, secret

# Answers every GET as an ipse proxy would, naming the victim's pid; with RELAY set, asks the
# proxy at RELAY for the same path and query and passes its answer on.
IMPOSTOR = textwrap.dedent(
    """
    import http.server, json, os, sys, urllib.request
    port, victim, relay = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if relay:
                data = urllib.request.urlopen(relay + self.path, timeout=5).read()
            else:
                data = json.dumps({"ok": True, "service": "ipse-proxy", "pid": victim,
                                   "proof": "0" * 64, "settings": "x"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ipse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ.copy(),
    )


@contextmanager
def _victim() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the impostor did not start")


@contextmanager
def _impostor(port: int, victim: int, relay: str = "") -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(port), str(victim), relay])
    try:
        _wait_for(port)
        yield process
    finally:
        process.kill()
        process.wait()


@contextmanager
def _impostor_as(user: int, port: int, victim: int) -> Iterator[list[int]]:
    """The impostor as another user: a forked child that drops to ``user`` before it binds (the
    interpreter may live where that user cannot run it), answering with raw sockets; the list
    holds, after the block, how many connections it accepted."""
    answer = json.dumps({"ok": True, "service": "ipse-proxy", "pid": victim, "proof": "0" * 64})
    response = (
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(answer)}\r\n\r\n{answer}"
    ).encode()
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            os.close(reading)
            os.setgid(user)
            os.setuid(user)
            server = socket.socket()
            server.bind(("127.0.0.1", port))
            server.listen()
            while True:
                connection, _ = server.accept()
                os.write(writing, b"x")  # one byte per connection accepted
                connection.recv(65536)
                connection.sendall(response)
                connection.close()
        finally:
            os._exit(0)
    os.close(writing)
    accepted: list[int] = []
    try:
        _wait_for(port)  # (a connection of its own: counted, and taken off below)
        yield accepted
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        with os.fdopen(reading, "rb") as pipe:
            accepted.append(len(pipe.read()) - 1)


@contextmanager
def _slow_listener(port: int, pace: float = 1.0) -> Iterator[list[bytes]]:
    """A listener of this test's process that reads each request, then answers one byte every
    ``pace`` seconds: a whole answer would take minutes. The requests it read, in the list."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()
    seen: list[bytes] = []
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n"

    def drip(connection: socket.socket) -> None:
        with connection:
            seen.append(connection.recv(65536))
            for byte in answer + b" " * 400:
                if stop.wait(pace):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=drip, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()


def test_a_listener_that_drips_its_answer_holds_no_command_and_is_named(
    _isolated_home: Path,
) -> None:
    """Each command asks with a deadline for the whole exchange (the subprocess's own timeout is
    a guard against a hang, not a measurement), then says what holds the port."""
    port = _port()
    holder = f"(pid {os.getpid()})"
    with _slow_listener(port) as seen:
        status = _ipse("proxy", "status", "--port", str(port))
        assert status.returncode == 1 and f"port {port} is held by" in status.stdout
        assert holder in status.stdout and "does not answer as an ipse proxy" in status.stdout
        as_json = json.loads(_ipse("proxy", "status", "--port", str(port), "--json").stdout)
        assert as_json["running"] is False and holder in as_json["held_by"]
        started = _ipse("proxy", "start", "--port", str(port))
        assert started.returncode == 1 and holder in started.stderr
        stopped = _ipse("proxy", "stop", "--port", str(port))
        assert stopped.returncode == 0 and "not running" in stopped.stdout
        assert holder in stopped.stdout
        assert seen and all(b"GET /ipse/health" in request for request in seen)


def _refused_everywhere(port: int, victim: subprocess.Popen[bytes], reason: str) -> None:
    started = _ipse("proxy", "start", "--port", str(port))
    assert started.returncode == 1, started.stdout + started.stderr
    assert "already running" not in started.stdout
    assert "not yours" in started.stderr and reason in started.stderr
    stopped = _ipse("proxy", "stop", "--port", str(port))
    assert stopped.returncode == 1 and "nothing was signalled" in stopped.stderr
    status = _ipse("proxy", "status", "--port", str(port), "--json")
    assert status.returncode == 1
    assert json.loads(status.stdout)["running"] is False
    assert victim.poll() is None  # never signalled


def test_an_impostor_on_the_port_is_refused(_isolated_home: Path) -> None:
    port = _port()
    with _victim() as victim, _impostor(port, victim.pid):
        _refused_everywhere(port, victim, "cannot prove")


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to switch")
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="socket owners are read in /proc")
def test_an_impostor_of_another_user_is_refused_by_the_sockets_owner(
    _isolated_home: Path,
) -> None:
    port = _port()
    with _victim() as victim, _impostor_as(65534, port, victim.pid) as accepted:
        _refused_everywhere(port, victim, "held by another user (uid 65534)")
    assert accepted == [0]  # refused before anything was sent to it


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to switch")
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="socket owners are read in /proc")
def test_a_port_another_user_holds_is_named(_isolated_home: Path) -> None:
    port = _port()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child: another user's silent listener
        try:
            os.setgid(65534)
            os.setuid(65534)
            server = socket.socket()
            server.bind(("127.0.0.1", port))
            server.listen()
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        _wait_for(port)
        started = _ipse("proxy", "start", "--port", str(port))
        assert started.returncode == 1
        assert "held by another user (uid 65534)" in started.stderr
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_a_relay_to_your_own_proxy_on_another_port_is_refused(_isolated_home: Path) -> None:
    own, front = _port(), _port()
    first = _ipse("proxy", "start", "--port", str(own), "--json")
    assert first.returncode == 0, first.stderr
    ours = json.loads(first.stdout)
    try:
        with _impostor(front, 0, relay=ours["url"]) as relay:
            started = _ipse("proxy", "start", "--port", str(front))
            assert started.returncode == 1 and "not yours" in started.stderr
            stopped = _ipse("proxy", "stop", "--port", str(front))
            assert stopped.returncode == 1
            assert relay.poll() is None
        # the real one was neither trusted through the relay nor stopped by it
        status = _ipse("proxy", "status", "--port", str(own), "--json")
        assert json.loads(status.stdout)["running"] is True
    finally:
        assert _ipse("proxy", "stop", "--port", str(own)).returncode == 0


def test_a_stale_pid_file_never_signals_another_process(_isolated_home: Path) -> None:
    port = _port()
    with _victim() as victim:
        (_isolated_home / f"proxy-{port}.pid").write_text(f"{victim.pid}\n")
        stopped = _ipse("proxy", "stop", "--port", str(port))
        assert stopped.returncode == 0 and "not running" in stopped.stdout
        assert victim.poll() is None


def test_the_secret_is_private_and_the_proof_binds_port_and_pid(tmp_path: Path) -> None:
    key = secret(tmp_path)
    assert secret(tmp_path) == key
    assert (tmp_path / SECRET_FILE).stat().st_mode & 0o777 == 0o600
    nonce = "ab" * 16
    proofs = {prove(key, nonce, port, pid) for port in (1, 2) for pid in (3, 4)}
    assert len(proofs) == 4 and None not in proofs
    assert prove(key, "not hex", 1, 3) is None
    (tmp_path / SECRET_FILE).chmod(0o644)
    with pytest.raises(Exception, match="readable by others"):
        secret(tmp_path)


def test_identify_says_nothing_answers(_isolated_home: Path) -> None:
    port = _port()
    found = identify(f"http://127.0.0.1:{port}", port, timeout=0.5)
    assert found.health is None and not found.own
