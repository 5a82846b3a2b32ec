"""ipse's own stdio server answers as the MCP SDK's server does: the same requests, in both
protocol eras (the ``initialize`` handshake and the 2026-07-28 per-request envelope), sent to
``ipse mcp`` and to the SDK's stdio server over the same tools, get the same answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

SDK_SERVER = (
    "import anyio\n"
    "from mcp.server.stdio import stdio_server\n"
    "from ipse.mcp import Settings, build_server\n"
    "server = build_server(Settings())\n"
    "async def main():\n"
    "    async with stdio_server() as (r, w):\n"
    "        await server.run(r, w, server.create_initialization_options())\n"
    "anyio.run(main)\n"
)
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}
NOTES = {"done": ["a"], "open": ["b"]}
NO_CAPABILITIES = {k: v for k, v in ENVELOPE.items() if "Capab" not in k}
FUTURE = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}


def _request(rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


HANDSHAKE = [
    _request(0, "initialize", INIT),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    _request(1, "tools/list"),
    _request(2, "tools/call", {"name": "micro_handoff", "arguments": NOTES}),
    _request(3, "tools/call", {"name": "recall", "arguments": {"id": "nowhere"}}),
    _request(4, "tools/call", {"name": "micro_handoff", "arguments": {"done": []}}),
    _request(5, "tools/call", {"name": "no_such_tool", "arguments": {}}),
    _request(6, "ping"),
    _request(7, "resources/list"),
    _request(8, "tools/call", {"arguments": {}}),
    _request(9, "tools/list", {"_meta": ENVELOPE}),
    _request(10, "initialize", {**INIT, "protocolVersion": "2099-01-01"}),
    _request(11, "tools/list", {"cursor": "x"}),
]
MODERN = [
    _request(1, "server/discover", {"_meta": ENVELOPE}),
    _request(2, "tools/list", {"_meta": ENVELOPE}),
    _request(3, "tools/call", {"name": "recall", "arguments": {"id": "x"}, "_meta": ENVELOPE}),
    _request(4, "tools/call", {"name": "micro_handoff", "arguments": NOTES, "_meta": ENVELOPE}),
    _request(5, "ping", {"_meta": ENVELOPE}),
    _request(6, "tools/list"),
    _request(7, "tools/list", {"_meta": NO_CAPABILITIES}),
    _request(8, "tools/list", {"_meta": FUTURE}),
    _request(9, "initialize", INIT),
    _request(10, "nothing/here", {"_meta": ENVELOPE}),
]


def _answers(argv: list[str], messages: list[dict[str, Any]], cwd: Path) -> list[Any]:
    """Each request's answer, one at a time (the next is sent when the last is answered)."""
    home = cwd / "home"
    env = {**os.environ, "IPSE_HOME": str(home), "IPSE_SESSION": "conformance"}
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    answers = []
    try:
        for message in messages:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                answers.append(json.loads(process.stdout.readline()))
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    return answers


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_ipse_answers_as_the_sdk_does(era: str, tmp_path: Path) -> None:
    messages = HANDSHAKE if era == "handshake" else MODERN
    (tmp_path / "ours").mkdir()
    (tmp_path / "sdk").mkdir()
    ours = _answers([sys.executable, "-m", "ipse", "mcp"], messages, tmp_path / "ours")
    sdk = _answers([sys.executable, "-c", SDK_SERVER], messages, tmp_path / "sdk")
    assert len(ours) == len(sdk) == sum("id" in m for m in messages)
    for mine, theirs in zip(ours, sdk, strict=True):
        assert mine == theirs
