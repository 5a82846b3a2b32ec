"""Running the proxy: in the foreground (`serve`; with ``workers`` above 1, forked workers on
the one socket under a supervisor, `ipse.proxy._workers`) and in a thread (`start_in_thread`);
whether an ipse proxy already answers on an address is `ipse.proxy._health.health_document`.

The socket is bound here, before uvicorn starts, so an address in use is one clear error rather
than a server log line; binding beyond loopback is allowed when asked and said out loud.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Any, TextIO

from ipse.errors import InputError, MissingExtra, UsageError
from ipse.proxy._config import ProxyConfig
from ipse.proxy._health import health_document


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtra("proxy", "uvicorn") from exc
    return uvicorn


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # proto IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it every response's first body bytes wait for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def warn_if_exposed(config: ProxyConfig, stream: TextIO | None = None) -> str | None:
    """The warning for an address other machines can reach (None on loopback)."""
    if config.loopback:
        return None
    line = (
        f"ipse proxy: warning: listening on {config.host}, not loopback: anyone who can reach "
        "this address can use the credentials your clients send through it"
    )
    print(line, file=stream or sys.stderr, flush=True)
    return line


def _server(app: Any) -> Any:
    uvicorn = _uvicorn()
    uv_config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=75,
        timeout_graceful_shutdown=30,
    )
    return uvicorn.Server(uv_config)


def _app(config: ProxyConfig, log_stream: TextIO | None) -> Any:
    _uvicorn()  # the missing extra is named before anything else is imported
    from ipse.proxy._app import create_app

    return create_app(config, log_stream=log_stream)


def serve(config: ProxyConfig, *, log_stream: TextIO | None = None) -> int:
    """Run the proxy in the foreground until interrupted; its exit status.

    With ``config.workers`` above 1, that many forked processes serve the one socket, bound
    here, and this process supervises them (`ipse.proxy._workers`)."""
    if hasattr(signal, "SIGPIPE"):
        # The CLI lets SIGPIPE end a piped command quietly; a server must instead see a closed
        # client socket as an error on that one connection, not die of it.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sock = bind(config.host, config.port)
    warn_if_exposed(config)
    app = _app(config, log_stream)  # built once: every worker is a fork of it
    host, port = sock.getsockname()[:2]
    print(f"ipse proxy: listening on http://{_show(host)}:{port}", file=sys.stderr, flush=True)
    if config.workers > 1:
        from ipse.proxy._workers import supervise

        return supervise(config.workers, lambda: _server(app).run(sockets=[sock]), sock)
    try:
        _server(app).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def _show(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@dataclass
class RunningProxy:
    """A proxy served by a thread of this process (tests, benchmarks)."""

    url: str
    server: Any
    thread: threading.Thread
    sock: socket.socket

    @property
    def app(self) -> Any:
        return self.server.config.app

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
        self.sock.close()


def start_in_thread(config: ProxyConfig, *, log_stream: TextIO | None = None) -> RunningProxy:
    """Serve on a thread; returns once the proxy accepts requests."""
    if config.workers != 1:
        raise UsageError("a proxy served by a thread has one worker (use `serve` for more)")
    sock = bind(config.host, config.port)
    server = _server(_app(config, log_stream))
    server.config.install_signal_handlers = False  # not the main thread
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    host, port = sock.getsockname()[:2]
    url = f"http://{_show(host)}:{port}"
    for _ in range(500):
        if server.started:
            break
        if not thread.is_alive():
            raise InputError("the proxy did not start")
        threading.Event().wait(0.01)
    return RunningProxy(url, server, thread, sock)


__all__ = ["RunningProxy", "bind", "health_document", "serve", "start_in_thread", "warn_if_exposed"]
