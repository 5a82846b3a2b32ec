"""The commands an install registers, and how ipse recognises them again.

The MCP server's command names this ipse by absolute path (`launcher`), so it runs when the
user's virtual environment is not active; a hook, which a shell runs, is shell-quoted
(`program`); ``IPSE_HOME``, when set, goes to each (`home_env`), so the server, the hooks and
the proxy use one home. An entry some ipse install wrote is recognised by its content
(`is_ipse_server`), whatever interpreter path it names, so uninstall finds it after an agent
CLI rewrote its config and dropped ipse's markers.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SERVER = "ipse"  # the name of ipse's entry in every agent CLI's MCP servers
DEFAULT_PORT = 8765
PROXY_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
LOOPBACK = re.compile(r"http://127\.0\.0\.1:([0-9]+)")
START = re.compile(r"(?:^| )proxy start(?: --[a-z-]+ .*)?(?: >/dev/null)?$")


def launcher() -> tuple[str, list[str]]:
    """The absolute command that runs this ipse, and the arguments before ipse's own: the
    ``ipse`` script beside the running interpreter (a virtual environment's ``bin/``), else
    the interpreter with ``-m ipse``."""
    python = os.path.abspath(sys.executable)
    script = os.path.join(os.path.dirname(python), "ipse")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return script, []
    return python, ["-m", "ipse"]


def program() -> str:
    """`launcher` as shell words, each quoted for the POSIX shell (for hooks a shell runs)."""
    command, args = launcher()
    return " ".join(shlex.quote(word) for word in (command, *args))


def home_env() -> dict[str, str]:
    """The environment the registered commands get: ``IPSE_HOME`` when it is set."""
    home = os.environ.get("IPSE_HOME")
    return {"IPSE_HOME": os.path.abspath(os.path.expanduser(home))} if home else {}


def hook_program() -> str:
    """`program` for a hook: after ``IPSE_HOME=...`` when it is set, so what the hook runs uses
    the home the rest of this install does."""
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in home_env().items())
    return env + program()


def proxy_url(port: int = DEFAULT_PORT) -> str:
    """The proxy's address on this machine."""
    return f"http://127.0.0.1:{port}"


def loopback_port(url: object) -> int | None:
    """The port of a ``http://127.0.0.1:PORT`` address (a path after it allowed), else None."""
    found = LOOPBACK.match(url) if isinstance(url, str) else None
    return int(found.group(1)) if found else None


def server_argv() -> tuple[str, list[str]]:
    """The command and arguments of ipse's stdio MCP server (no shell runs it: plain argv)."""
    command, args = launcher()
    return command, [*args, "mcp"]


def start_command(
    port: int, upstreams: Mapping[str, str] | None = None, record: str | None = None
) -> str:
    """The shell command that starts the proxy (idempotent: exits 0 when one answers), with
    the upstreams install was given (``anthropic``, ``openai``: origins the proxy forwards to)
    and the file it records every exchange in (``--record``, an absolute path)."""
    flags = "" if port == DEFAULT_PORT else f" --port {port}"
    for name, url in sorted((upstreams or {}).items()):
        flags += f" --{name}-upstream {shlex.quote(url)}"
    if record:
        flags += f" --record {shlex.quote(record)}"
    return f"{hook_program()} proxy start{flags}"


def is_ipse_server(entry: Any) -> bool:
    """An MCP server entry some ipse install wrote (any interpreter path): argv ending in
    ``... mcp`` run by an ``ipse`` executable or a Python running ``-m ipse``."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or args[-1:] != ["mcp"]:
        return False
    name = Path(command).name
    return Path(name).stem == "ipse" or (name.startswith("python") and args[:2] == ["-m", "ipse"])


__all__ = [
    "DEFAULT_PORT",
    "LOOPBACK",
    "PROXY_URL",
    "SERVER",
    "START",
    "home_env",
    "hook_program",
    "is_ipse_server",
    "launcher",
    "loopback_port",
    "program",
    "proxy_url",
    "server_argv",
    "start_command",
]
