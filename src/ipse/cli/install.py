"""``ipse install`` / ``ipse uninstall``: register ipse's MCP server (and the proxy) with an
agent CLI (a thin front end over `ipse.agents`).

Uninstall also deals with the proxy the removed settings routed through (the one Claude Code's
hooks started, or the one Codex's provider pointed at): it stops it when it is this user's own
(`ipse.proxy.identify`), no other install ipse can see routes through that port, and no request
is in flight; otherwise it says in one line that it still runs, why, and how to stop it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ipse.agents import AGENTS
from ipse.cli._output import console, emit_json

_AGENT = click.option(
    "--agent",
    type=click.Choice(AGENTS),
    required=True,
    help="The agent CLI.",
)
_USER = click.option("--user", is_flag=True, help="The user's own config, not the project's.")
_ROOT = click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=Path("."),
    help="The project folder.",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


AUTOPILOT_NOTE = (
    "the proxy's autopilot is on (--autopilot cut): as a conversation grows it asks the agent to "
    "checkpoint, then cuts at a turn boundary itself before the agent CLI would compact; turn it "
    "off with IPSE_AUTOPILOT=off in the agent CLI's environment (a proxy already running takes "
    "it when started again with --restart, or --autopilot off), or only nudge with "
    "IPSE_AUTOPILOT=nudge"
)


def _report(
    changes: list[Any],
    as_json: bool,
    notes: list[str] | None = None,
    proxy: dict[str, Any] | None = None,
) -> None:
    if as_json:
        document: dict[str, Any] = {
            "changes": [{"path": c.path, "action": c.action} for c in changes]
        }
        if notes is not None:
            document["notes"] = notes
        if proxy is not None:
            document["proxy"] = proxy
        emit_json(document)
        return
    out = console()
    if not changes:
        out.print("nothing to change", markup=False)
    for change in changes:
        out.print(f"{change.action}: {change.path}", markup=False, soft_wrap=True)
    for note in notes or []:
        out.print(f"note: {note}", markup=False, soft_wrap=True)


@click.command("install")
@_AGENT
@_USER
@click.option(
    "--proxy",
    is_flag=True,
    help="Also route the agent through the ipse proxy (http://127.0.0.1:PORT; not Gemini).",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="The proxy's port (with --proxy).",
)
@click.option(
    "--anthropic-upstream",
    metavar="URL",
    help="With --proxy: where the proxy sends Anthropic requests (default: the public API).",
)
@click.option(
    "--openai-upstream",
    metavar="URL",
    help="With --proxy: where the proxy sends OpenAI requests (default: the public API).",
)
@click.option(
    "--record",
    metavar="FILE",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --proxy: the proxy the hooks start (or the printed command) appends every "
    "exchange to FILE, as `ipse proxy --record` does.",
)
@click.option(
    "--statusline",
    is_flag=True,
    help="Also show `ipse usage statusline` under Claude Code's prompt (a status line "
    "already set is refused, never replaced).",
)
@_ROOT
@_JSON
def install_command(
    agent: str,
    user: bool,
    proxy: bool,
    port: int,
    anthropic_upstream: str | None,
    openai_upstream: str | None,
    record: Path | None,
    statusline: bool,
    root: Path,
    as_json: bool,
) -> None:
    """Register `ipse mcp` with an agent and say what checkpoints do in its instructions.

    claude-code: .mcp.json (--user: .claude.json in $CLAUDE_CONFIG_DIR or ~) and CLAUDE.md;
    codex: [mcp_servers.ipse] in $CODEX_HOME/config.toml and AGENTS.md; gemini:
    .gemini/settings.json ($GEMINI_CLI_HOME/.gemini with --user; the entry says trust, so
    Gemini CLI calls ipse's tools without asking, which `gemini -p` needs) and GEMINI.md. --proxy:
    Claude Code gets ANTHROPIC_BASE_URL and hooks that start the proxy (and refuse a prompt,
    saying why, when it cannot start); Codex a model provider at the proxy (start the proxy
    yourself: install prints the command); refused when the proxy's extra is not installed
    (the server itself needs none). The entry makes Claude Code (alwaysLoad) and Codex
    (required) wait for ipse's tools before the first request. Idempotent; `ipse uninstall`
    removes exactly what was added.

    \b
    Examples:
      ipse install --agent claude-code --proxy
      ipse install --agent codex --proxy
      ipse install --agent gemini --user
      ipse install --agent claude-code --user --statusline
    """
    from ipse.agents import install_agent
    from ipse.agents._shared import install_notes, proxy_port
    from ipse.errors import UsageError

    upstreams = {"anthropic": anthropic_upstream, "openai": openai_upstream}
    given = {k: v for k, v in upstreams.items() if v}
    if (given or record) and not proxy:
        raise UsageError("--anthropic-upstream, --openai-upstream and --record go with --proxy")
    kept = str(record.resolve()) if record else None  # the hook runs in another folder
    options = {"user": user, "proxy": proxy, "port": port, "upstreams": given, "record": kept,
               "statusline": statusline}  # fmt: skip
    changes = install_agent(agent, root, **options)  # type: ignore[arg-type]
    notes = install_notes(agent, root, **options)  # type: ignore[arg-type]
    if proxy or proxy_port(agent, root, user=user) is not None:  # (an earlier --proxy stays)
        notes.append(AUTOPILOT_NOTE)
    _report(changes, as_json, notes)


@click.command("uninstall")
@_AGENT
@_USER
@click.option(
    "--proxy",
    is_flag=True,
    help="Accepted for symmetry: uninstall always removes the proxy settings install wrote.",
)
@_ROOT
@_JSON
def uninstall_command(agent: str, user: bool, proxy: bool, root: Path, as_json: bool) -> None:
    """Remove what `ipse install` added, with or without --proxy (every other byte of each
    file stays; entries an agent CLI rewrote are found by their content).

    The proxy those settings routed through is stopped when it is yours, nothing else ipse can
    see routes through its port and no request is in flight; else one line says it still runs
    and how to stop it.

    \b
    Examples:
      ipse uninstall --agent claude-code
      ipse uninstall --agent codex --proxy --json
    """
    from ipse.agents import uninstall_agent
    from ipse.agents._shared import proxy_port, routed_ports

    del proxy  # the proxy's settings go whenever install wrote them
    port = proxy_port(agent, root, user=user)
    changes = uninstall_agent(agent, root, user=user)
    if port is None:
        _report(changes, as_json)
        return
    outcome = _left_proxy(port, routed_ports(root).get(port, []))
    line = outcome.pop("line")
    _report(changes, as_json, [line] if line else [], outcome)


def _left_proxy(port: int, users: list[str]) -> dict[str, Any]:
    """Stop the proxy on ``port`` that the removed settings routed through, when that is safe;
    what happened, and the line that says so (None when no ipse proxy answers there)."""
    from ipse.agents._shared import proxy_url
    from ipse.cli.proxy import stop_proxy
    from ipse.proxy._shared import identify

    url = proxy_url(port)
    how = f"stop it with `ipse proxy stop --port {port}`"
    listener = identify(url, port)
    found: dict[str, Any] = {"url": url, "running": listener.health is not None, "stopped": False}
    if listener.health is None:
        return {**found, "line": None}
    pid, inflight = listener.pid, listener.health.get("inflight")
    if not listener.own:
        why = f"it is not yours ({listener.reason})"
    elif users:
        why = f"{', '.join(users)} still route(s) through it"
    elif inflight or listener.health.get("workers", 1) != 1:
        why = f"{inflight} request(s) in flight" if inflight else "it runs several workers"
    else:
        stop_proxy(pid, port, url)
        line = f"stopped the ipse proxy at {url} (pid {pid}), which nothing else routes through"
        return {**found, "running": False, "stopped": True, "pid": pid, "line": line}
    line = f"the ipse proxy at {url} (pid {pid}) still runs: {why}; {how}"
    return {**found, "pid": pid, "reason": why, "line": line}
