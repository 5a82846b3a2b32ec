"""``ipse mcp`` as a real subprocess: the SDK's client over stdio and over streamable HTTP, and
the one-line message when the ``mcp`` extra is missing."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from ipse.archive import open_archive
from ipse.mcp import tools
from ipse.statedir import init
from mcp import Client, StdioServerParameters
from tests.conftest import CliRun


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "IPSE_HOME": str(home), "IPSE_SESSION": "stdio-session"}


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.contextmanager
def served(transport: str, cwd: Path, home: Path, *args: str) -> Iterator[Any]:
    """What `Client` connects to: ``ipse mcp ARGS`` as a subprocess over ``transport``."""
    if transport == "stdio":
        yield StdioServerParameters(
            command=sys.executable,
            args=["-m", "ipse", "mcp", *args],
            env=_env(home),
            cwd=str(cwd),
        )
        return
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ipse", "mcp", "--http", str(port), *args],
        cwd=cwd,
        env=_env(home),
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_server_lists_and_calls_tools(
    transport: str, tmp_path: Path, _isolated_home: Path
) -> None:
    init(tmp_path / "state", "Port the parser")

    async def main(target: Any) -> dict[str, Any]:
        async with Client(target) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            handoff = await client.call_tool("micro_handoff", {"done": ["a"], "open": ["b"]})
            bad = await client.call_tool("micro_handoff", {"done": ["a"]})
            following = await client.call_tool("state_next", {"text": "write the tokenizer"})
            twin = await client.call_tool("twin_show", {})
            return {"names": names, "handoff": handoff, "bad": bad, "next": following,
                    "twin": twin}  # fmt: skip

    with served(transport, tmp_path, _isolated_home) as target:
        got = anyio.run(main, target)
    assert got["names"] == [
        "micro_handoff",
        "recall",
        "state_resume",
        "state_next",
        "state_invariant",
        "state_checkpoint",
    ]  # fmt: skip  (no twin: the twin_* tools could only fail, so they are not offered)
    assert not got["handoff"].is_error
    assert got["handoff"].structured_content["session"] == "stdio-session"
    assert got["bad"].is_error and "missing argument 'open'" in got["bad"].content[0].text
    assert not got["next"].is_error  # the server survived the bad call
    assert got["twin"].is_error and "ipse mcp --twin ID" in got["twin"].content[0].text
    assert "write the tokenizer" in (tmp_path / "state" / "99_next.md").read_text()
    archive = open_archive()
    try:
        [item] = archive.items("stdio-session")
    finally:
        archive.close()
    assert item.kind == "checkpoint"


def test_with_a_twin_the_twin_tools_are_offered(
    transport: str, tmp_path: Path, _isolated_home: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'twins.db'}"

    async def main(target: Any) -> Any:
        async with Client(target) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            done = await client.call_tool("twin_make_commitment", {"text": "reply by Friday"})
            return names, done

    with served(transport, tmp_path, _isolated_home, "--twin", "ada", "--store", store) as target:
        names, done = anyio.run(main, target)
    assert names == [t.name for t in tools()]
    assert not done.is_error, done.content


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise AssertionError(process.stderr.read().decode() if process.stderr else "exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server did not start listening")


def test_streamable_http_server(tmp_path: Path, _isolated_home: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ipse", "mcp", "--http", str(port), "--session", "http-s"],
        cwd=tmp_path,
        env=_env(_isolated_home),
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(port, process)

        async def main() -> Any:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.call_tool("micro_handoff", {"done": [], "open": ["x"]})

        result = anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert not result.is_error, result.content
    assert result.structured_content["session"] == "http-s"


def test_a_non_loopback_address_is_warned_about(tmp_path: Path, _isolated_home: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ipse", "mcp", "--http", str(port), "--host", "0.0.0.0"],
        cwd=tmp_path,
        env=_env(_isolated_home),
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(port, process)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert "warning: serving on 0.0.0.0" in err.decode()


def test_without_the_extra_the_message_names_it(
    cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    done = cli("mcp", "--http", "8799")  # (stdio needs no extra)
    assert done.returncode == 2
    assert "pip install 'ipse[mcp]'" in done.stderr and len(done.stderr.splitlines()) == 1
