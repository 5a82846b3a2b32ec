"""``ipse install`` / ``ipse uninstall``: register ipse's MCP server (and the proxy) with an
agent harness (a thin front end over `ipse.harness`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ipse.cli._output import console, emit_json

_AGENT = click.option(
    "--agent",
    type=click.Choice(["claude-code", "codex", "gemini"]),
    required=True,
    help="The agent harness.",
)
_USER = click.option("--user", is_flag=True, help="The user's own config, not the project's.")
_ROOT = click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=Path("."),
    help="The project folder.",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _report(changes: list[Any], as_json: bool) -> None:
    if as_json:
        emit_json({"changes": [{"path": c.path, "action": c.action} for c in changes]})
        return
    out = console()
    if not changes:
        out.print("nothing to change", markup=False)
    for change in changes:
        out.print(f"{change.action}: {change.path}", markup=False, soft_wrap=True)


@click.command("install")
@_AGENT
@_USER
@click.option(
    "--proxy",
    is_flag=True,
    help="Also route the agent through the ipse proxy (http://127.0.0.1:8765).",
)
@_ROOT
@_JSON
def install_command(agent: str, user: bool, proxy: bool, root: Path, as_json: bool) -> None:
    """Register `ipse mcp` with an agent and add the narration section to its instructions.

    claude-code: .mcp.json (--user: ~/.claude.json) and CLAUDE.md; codex: [mcp_servers.ipse]
    in $CODEX_HOME/config.toml and AGENTS.md; gemini: .gemini/settings.json and GEMINI.md.
    --proxy: Claude Code gets ANTHROPIC_BASE_URL and a SessionStart hook that starts the
    proxy (.claude/settings.json); Codex a model provider at the proxy. Idempotent; `ipse
    uninstall` removes exactly what was added.

    \b
    Examples:
      ipse install --agent claude-code
      ipse install --agent codex --proxy
      ipse install --agent gemini --user
    """
    from ipse.harness import install_agent

    _report(install_agent(agent, root, user=user, proxy=proxy), as_json)


@click.command("uninstall")
@_AGENT
@_USER
@_ROOT
@_JSON
def uninstall_command(agent: str, user: bool, root: Path, as_json: bool) -> None:
    """Remove exactly what `ipse install` added (every other byte of each file stays).

    \b
    Example:
      ipse uninstall --agent claude-code
    """
    from ipse.harness import uninstall_agent

    _report(uninstall_agent(agent, root, user=user), as_json)
