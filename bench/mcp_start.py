"""How soon ``ipse mcp`` (stdio) answers a harness, as ratios against a bare interpreter.

A harness starts the server and asks ``initialize`` then ``tools/list``; what it sends the model
before the tool list arrives lacks ipse's tools (Codex does not wait, Claude Code in ``-p`` mode
may not). Measured from spawn:

- ``initialize`` answered, and ``tools/list`` answered, for ``ipse mcp`` (the installed
  ``ipse`` script, or ``python -m ipse`` with ``-m``), against
- a bare ``python -c "import json"`` run to its end (target: ``initialize`` within 3x),
- and, for reference, the same two answers from the MCP SDK's own stdio server over the same
  tools (``--sdk``; what ``ipse mcp`` was before it answered by itself).

Every measurement is a fresh process; the kinds are interleaved (drift hits all alike) and the
median and best of N are printed.

    python bench/mcp_start.py [--repeat N] [-m] [--sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

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


def ipse_command(module: bool) -> list[str]:
    """The installed ``ipse`` script next to this interpreter, else ``python -m ipse``."""
    script = Path(sys.executable).with_name("ipse")
    return [str(script)] if script.exists() and not module else [sys.executable, "-m", "ipse"]


def bare(env: dict[str, str]) -> float:
    """Seconds from spawn to the end of ``python -c "import json"``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import json"], env=env, check=True)
    return time.perf_counter() - start


def server(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Seconds from spawn to ``initialize`` answered and to ``tools/list`` answered (sent as
    soon as ``initialize`` was), and how many tools were listed."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    child.stdin.flush()
    json.loads(child.stdout.readline())
    initialized = time.perf_counter() - start
    child.stdin.write(json.dumps(INITIALIZED).encode() + b"\n" + json.dumps(LIST).encode() + b"\n")
    child.stdin.flush()
    listed = json.loads(child.stdout.readline())
    tools = time.perf_counter() - start
    child.stdin.close()
    child.wait(timeout=30)
    return initialized, tools, len(listed["result"]["tools"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("-m", action="store_true", help="python -m ipse, not the ipse script")
    parser.add_argument("--sdk", action="store_true", help="also the SDK's stdio server")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        env = {**os.environ, "IPSE_HOME": str(cwd / "home"), "IPSE_SESSION": "bench"}
        ipse = [*ipse_command(options.m), "mcp"]
        kinds: dict[str, list[tuple[float, float]]] = {"bare": [], "ipse": [], "sdk": []}
        count = 0
        for _ in range(options.repeat):
            kinds["bare"].append((bare(env), 0.0))
            first, second, count = server(ipse, env, cwd)
            kinds["ipse"].append((first, second))
            if options.sdk:
                first, second, _ = server([sys.executable, "-c", SDK_SERVER], env, cwd)
                kinds["sdk"].append((first, second))
    base = statistics.median(t for t, _ in kinds["bare"])
    print(f"bare python -c 'import json': median {base * 1000:.0f} ms")
    names = ["ipse", "sdk"] if options.sdk else ["ipse"]
    for name in names:
        runs = kinds[name]
        init = statistics.median(t for t, _ in runs)
        tools = statistics.median(t for _, t in runs)
        print(
            f"{name:4} initialize: median {init * 1000:.0f} ms (best "
            f"{min(t for t, _ in runs) * 1000:.0f}), {init / base:.1f}x bare; "
            f"tools/list: median {tools * 1000:.0f} ms, {tools / base:.1f}x bare"
        )
    print(f"({count} tools listed; {options.repeat} runs each; target: initialize <= 3.0x)")


if __name__ == "__main__":
    main()
