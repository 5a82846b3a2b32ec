"""The one table of agent CLIs: what ``--agent`` calls each, and the module that answers for it.

Everything that knows agent CLIs asks this table: ``ipse install``/``uninstall`` and ``ipse
state install`` offer its names, install and uninstall run the module's `AgentCLI`, the MCP
server looks for its session file in each one's session folder, the proxy tells which agent CLI
sent a request by the start of its user agent or ``originator`` header (`agent_sending`). A
new agent CLI is its module (an `AgentCLI` named ``AGENT``, see `ipse.agents._agent`) and one
`Registered` line here.

Modules are named, not imported: importing the table imports no agent module, and using one
imports only that one.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ipse.errors import UsageError

if TYPE_CHECKING:
    from ipse.agents._agent import AgentCLI


@dataclass(frozen=True, slots=True)
class Registered:
    """One agent CLI: the name ``--agent`` gives it, its module under ``ipse.agents``, and how
    the user agent (or ``originator`` header) of the requests it sends starts, lower-cased."""

    name: str
    module: str
    sends_as: tuple[str, ...] = ()


# In the order ``--agent`` lists them.
AGENT_TABLE: tuple[Registered, ...] = (
    Registered("claude-code", "claude_code", ("claude-cli",)),
    Registered("codex", "codex", ("codex",)),
    Registered("gemini", "gemini"),  # (speaks the Gemini API, which the proxy does not serve)
)

AGENTS: tuple[str, ...] = tuple(r.name for r in AGENT_TABLE)
_BY_NAME = {r.name: r for r in AGENT_TABLE}


def agent_named(name: str) -> AgentCLI:
    """The agent CLI ``--agent`` calls ``name``; `UsageError` for a name not in the table."""
    entry = _BY_NAME.get(name)
    if entry is None:
        raise UsageError(f"unknown agent {name!r} (choose from {', '.join(AGENTS)})")
    agent: AgentCLI = importlib.import_module(f"ipse.agents.{entry.module}").AGENT
    return agent


def agent_sending(headers: Mapping[str, str]) -> str | None:
    """The name of the agent CLI whose request carries ``headers`` (lower-cased names), by
    the start of its user agent or ``originator`` header (None: none the table knows)."""
    sent = (headers.get("user-agent", "").lower(), headers.get("originator", "").lower())
    for entry in AGENT_TABLE:
        if any(value.startswith(entry.sends_as) for value in sent if entry.sends_as):
            return entry.name
    return None


def every_agent() -> list[AgentCLI]:
    """Every registered agent CLI, in table order (each module imported now)."""
    return [agent_named(name) for name in AGENTS]


__all__ = ["AGENTS", "AGENT_TABLE", "Registered", "agent_named", "agent_sending", "every_agent"]
