"""A journey's proxy runs on a port of the journey's own, which it gives ``ipse install --port``:
another program that holds ipse's default port (8765) changes nothing, and journeys run side by
side. The README's test line (the whole suite) used to fail whenever 8765 was taken.

Uses port 8765 (holds it, or finds it held): run under ``flock /tmp/ipse-8765.lock``.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Iterator
from pathlib import Path

from tests.journey import codex
from tests.journey._world import World
from tests.support.openai_upstream import openai_upstream

DEFAULT_PORT = 8765  # where `ipse install --proxy` points an agent without --port


@contextlib.contextmanager
def default_port_taken() -> Iterator[None]:
    """Port 8765 held by a program that is not ipse (a listener that never answers), or
    already held by another."""
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", DEFAULT_PORT))
        listener.listen()
    except OSError as exc:
        listener.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        yield  # someone else holds it: taken all the same
        return
    try:
        yield
    finally:
        listener.close()


def test_a_journeys_proxy_starts_while_another_program_holds_the_default_port(
    tmp_path: Path,
) -> None:
    codex_home = tmp_path / "home" / ".codex"
    world = World.create(tmp_path, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-journey-0000")
    codex_home.mkdir()
    (codex_home / "config.toml").write_bytes(codex.CONFIG)
    assert world.port != DEFAULT_PORT
    with default_port_taken(), openai_upstream(codex.model) as upstream:
        try:
            codex._install(world, upstream.url)  # install, then the proxy it says to start
        finally:
            world.stop_proxy()
    world.seams.verdict()
    config = (codex_home / "config.toml").read_text()
    assert f"http://127.0.0.1:{world.port}/v1" in config
