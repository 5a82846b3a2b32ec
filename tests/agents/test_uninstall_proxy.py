"""``ipse uninstall`` and the proxy the removed settings routed through: a real background
proxy (``ipse proxy start``, as Claude Code's hooks or Codex's printed line start it) on a free
port. Uninstall stops it when it is this user's own and nothing else ipse can see routes through
its port; otherwise it leaves it running and says so in one line, with how to stop it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ipse.proxy._serve import health_document


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home, project


def _ipse(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env=os.environ.copy(),
    )


@contextmanager
def _running(project: Path, port: int) -> Iterator[int]:
    """A background proxy on ``port`` (its pid), stopped afterwards whatever happened."""
    started = _ipse(project, "proxy", "start", "--port", str(port), "--json")
    assert started.returncode == 0, started.stderr
    try:
        yield int(json.loads(started.stdout)["pid"])
    finally:
        _ipse(project, "proxy", "stop", "--port", str(port))


def _uninstall(project: Path, *args: str) -> dict[str, Any]:
    done = _ipse(project, "uninstall", *args, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_uninstall_stops_the_proxy_it_routed_through(homes: tuple[Path, Path], agent: str) -> None:
    _, project = homes
    port = _port()
    installed = _ipse(project, "install", "--agent", agent, "--proxy", "--port", str(port))
    assert installed.returncode == 0, installed.stderr
    url = f"http://127.0.0.1:{port}"
    with _running(project, port) as pid:
        assert health_document(url) is not None
        flags = ["--proxy"] if agent == "codex" else []
        document = _uninstall(project, "--agent", agent, *flags)
        assert health_document(url) is None  # stopped: nothing appends to its record now
    assert document["proxy"] == {"url": url, "running": False, "stopped": True, "pid": pid}
    assert document["notes"] == [
        f"stopped the ipse proxy at {url} (pid {pid}), which nothing else routes through"
    ]


def test_a_proxy_another_install_routes_through_keeps_running(homes: tuple[Path, Path]) -> None:
    """The user's own Claude Code settings still route through the port: uninstalling the
    project's install leaves the proxy, and says why and how to stop it."""
    _, project = homes
    port = str(_port())
    for scope in ([], ["--user"]):
        flags = [*scope, "--proxy", "--port", port]
        done = _ipse(project, "install", "--agent", "claude-code", *flags)
        assert done.returncode == 0, done.stderr
    url = f"http://127.0.0.1:{port}"
    with _running(project, int(port)) as pid:
        done = _ipse(project, "uninstall", "--agent", "claude-code")
        assert done.returncode == 0, done.stderr
        assert health_document(url) is not None  # still running
    assert done.stdout.splitlines()[-1] == (
        f"note: the ipse proxy at {url} (pid {pid}) still runs: Claude Code (the user's "
        f"settings.json) still route(s) through it; stop it with `ipse proxy stop --port {port}`"
    )


class _Impostor(BaseHTTPRequestHandler):
    """Answers the health address as an ipse proxy would, without the proof only this user's
    proxy can give."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        data = json.dumps({"service": "ipse-proxy", "pid": os.getpid(), "inflight": 0}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_proxy_that_is_not_ours_is_left_alone(homes: tuple[Path, Path]) -> None:
    _, project = homes
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        done = _ipse(project, "install", "--agent", "codex", "--proxy", "--port", str(port))
        assert done.returncode == 0, done.stderr
        document = _uninstall(project, "--agent", "codex", "--proxy")
    finally:
        server.shutdown()
        server.server_close()
    proxy = document["proxy"]
    assert proxy["stopped"] is False and proxy["running"] is True
    assert "it is not yours" in proxy["reason"], proxy
    assert document["notes"][0].endswith(f"stop it with `ipse proxy stop --port {port}`")


def test_no_proxy_installed_no_proxy_said(homes: tuple[Path, Path]) -> None:
    _, project = homes
    assert _ipse(project, "install", "--agent", "claude-code").returncode == 0
    document = _uninstall(project, "--agent", "claude-code")
    assert "proxy" not in document and "notes" not in document


def test_what_still_routes_through_a_port_is_named_once_each(homes: tuple[Path, Path]) -> None:
    """Codex keeps one config for both scopes: it is named once, as the user's."""
    from ipse.agents import install_agent
    from ipse.agents._install import routed_ports

    _, project = homes
    install_agent("codex", project, proxy=True, port=9388)
    install_agent("claude-code", project, proxy=True, port=9388)
    assert routed_ports(project) == {
        9388: ["Claude Code (the project's settings.json)", "Codex (the user's config.toml)"]
    }
