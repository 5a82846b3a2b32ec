"""Several worker processes behind one listening socket (``ipse proxy --workers N``).

The parent binds the socket and builds the app once, then forks ``N`` workers that each serve
that socket with their own uvicorn server: the kernel hands every new connection to one of them.
The parent serves nothing; it supervises:

- a worker that dies (a crash, an out-of-memory kill, a signal) is replaced by a fresh fork of
  the app the parent built, which has never served (its caches and store connections are the
  new worker's own); workers that keep dying within `EARLY` seconds of their start, `GIVE_UP`
  times in a row, stop the proxy (exit 1) rather than fork forever;
- SIGTERM or SIGINT (``ipse proxy stop``, Ctrl-C) is passed to every worker as SIGTERM: each
  stops accepting, finishes its open streams and drains its bookkeeping (records, log lines,
  store writes); a worker still running `GRACE` seconds later is killed; the parent exits last;
- a worker whose parent is gone (SIGKILLed) stops itself within a second, so no worker outlives
  its supervisor holding the port.

The app's health document names the parent's pid (the process that built the app), so ``ipse
proxy start | stop | status`` find and signal the supervisor, never one worker. Each worker keeps
its own in-memory caches; what a conversation's rewrite depends on is its body and the store,
so any worker rewrites any request to the same bytes, as replicas behind a balancer do. Needs
``os.fork`` (Linux, macOS).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

EARLY = 5.0  # seconds: a worker that dies sooner than this after its start died early
GIVE_UP = 5  # early deaths in a row after which the supervisor stops the proxy
GRACE = 35.0  # seconds the workers get to finish their streams and drain (uvicorn's 30, and some)
_POLL = 0.1  # seconds between the supervisor's looks at its workers
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _say(line: str) -> None:
    print(f"ipse proxy: {line}", file=sys.stderr, flush=True)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(number).name}"
        return f"killed by signal {number}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _watch_parent(parent: int) -> None:
    """Stop this worker gracefully once its supervisor is gone (its parent pid changes)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="ipse-proxy-parent", daemon=True).start()


def _worker(serve: Callable[[], None], parent: int) -> None:
    """The child's whole life: serve until told to stop, then end without unwinding the
    parent's stack (``os._exit``)."""
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        _watch_parent(parent)
        serve()
    except KeyboardInterrupt:
        pass
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


class Supervisor:
    """Forks ``count`` workers that each run ``serve`` (which serves the shared socket), keeps
    that many alive, and stops them all on SIGTERM or SIGINT (`run`)."""

    def __init__(self, count: int, serve: Callable[[], None]) -> None:
        self.count = count
        self.serve = serve
        self.workers: dict[int, float] = {}  # pid -> when it started
        self.stopping: list[int] = []  # the signals that asked for a stop
        self.early = 0  # workers in a row that died early

    def _spawn(self) -> int:
        parent = os.getpid()
        # signals wait until the child has its own handlers: one sent in between is not lost
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                _worker(self.serve, parent)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        self.workers[pid] = time.monotonic()
        return pid

    def _on_signal(self, number: int, frame: Any) -> None:
        self.stopping.append(number)

    def run(self) -> int:
        """Supervise until asked to stop; 0, or 1 when the workers kept dying at start."""
        previous = {number: signal.signal(number, self._on_signal) for number in _SIGNALS}
        try:
            for _ in range(self.count):
                self._spawn()
            _say(f"{self.count} workers (pids {', '.join(map(str, self.workers))})")
            code = self._supervise()
            self._stop_all()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        return code

    def _supervise(self) -> int:
        while not self.stopping:
            for pid, status, lived in self._reaped():
                self.early = self.early + 1 if lived < EARLY else 0
                if self.early >= GIVE_UP:
                    _say(f"worker {pid} {_how(status)}; {GIVE_UP} workers in a row died within "
                         f"{EARLY:.0f} s of their start: stopping")  # fmt: skip
                    return 1
                replacement = self._spawn()
                _say(f"worker {pid} {_how(status)}; started worker {replacement}")
            time.sleep(_POLL)
        return 0

    def _reaped(self) -> list[tuple[int, int, float]]:
        """The workers that ended since the last look, with their wait status and how long
        they lived; no longer counted as workers (their pids may be reused at once)."""
        ended: list[tuple[int, int, float]] = []
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in self.workers:
                ended.append((pid, status, time.monotonic() - self.workers.pop(pid)))
        return ended

    def _stop_all(self) -> None:
        """SIGTERM every worker, wait `GRACE` seconds for them to drain, then SIGKILL."""
        for pid in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while self.workers and time.monotonic() < deadline:
            self._reaped()
            time.sleep(_POLL)
        for pid in list(self.workers):
            _say(f"worker {pid} did not stop within {GRACE:.0f} s: killing it")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self.workers.pop(pid, None)


def supervise(count: int, serve: Callable[[], None], sock: socket.socket) -> int:
    """Run ``count`` workers of ``serve`` on ``sock`` until SIGTERM or SIGINT (see `Supervisor`);
    the exit status for the proxy."""
    try:
        return Supervisor(count, serve).run()
    finally:
        sock.close()


__all__ = ["EARLY", "GIVE_UP", "GRACE", "Supervisor", "supervise"]
