"""``ipse mcp`` as a real subprocess: the SDK's client over stdio and over streamable HTTP, and
the one-line message when the ``mcp`` extra is missing."""

from __future__ import annotations

import contextlib
import json
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
            return {"names": names, "handoff": handoff, "bad": bad, "next": following, "twin": twin}

    with served(transport, tmp_path, _isolated_home) as target:
        got = anyio.run(main, target)
    assert got["names"] == [
        "micro_handoff",
        "recall",
        "archive_list",
        "state_resume",
        "state_next",
        "state_invariant",
        "state_checkpoint",
    ]  # (no twin: the twin_* tools could only fail, so they are not offered)
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


MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _answer(response: Any) -> dict[str, Any]:
    """The JSON-RPC message of an HTTP answer (JSON, or one server-sent event)."""
    text = response.text
    if text.startswith("event:"):
        text = next(ln[5:] for ln in text.splitlines() if ln.startswith("data:"))
    found: dict[str, Any] = json.loads(text)
    return found


def test_over_http_every_request_gets_an_answer(tmp_path: Path, _isolated_home: Path) -> None:
    import httpx

    envelope = json.dumps(MODERN).encode()
    with served("http", tmp_path, _isolated_home) as url:
        modern = {
            **HEADERS,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "recall",
        }
        call = (
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall",'
            b'"arguments":{"id":"\\ud800"},"_meta":' + envelope + b"}}"
        )
        surrogate = _answer(httpx.post(url, content=call, headers=modern, timeout=30))
        long_call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"id": "a" * 80_000}, "_meta": MODERN},
        }
        long = _answer(httpx.post(url, json=long_call, headers=modern, timeout=30))
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        started = httpx.post(url, json=init, headers=HEADERS, timeout=30)
        session = {
            **HEADERS,
            "mcp-session-id": started.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        answers = [
            _answer(httpx.post(url, content=body, headers=session, timeout=30))
            for body in (
                b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
                b'{"jsonrpc":"2.0","id":5,',
                b'{"jsonrpc":"2.0","id":6,"method":"ping","x":"\xff"}',
            )
        ]
    assert surrogate["id"] == 2 and surrogate["result"]["isError"]
    text = long["result"]["content"][0]["text"]
    assert long["result"]["isError"] and len(text) < 2100 and text.endswith("more characters]")
    for answer in answers:  # the SDK refuses what it cannot parse, with an error
        assert answer["error"]["code"] == -32700
