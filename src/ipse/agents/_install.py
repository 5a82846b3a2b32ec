"""``ipse install`` / ``uninstall`` for any agent CLI in the table: register ipse's MCP server
(and, with ``proxy``, the proxy) and put a section saying what checkpoints do in the agent CLI's
instructions file; take it all out again.

What each agent CLI gets, and where, is its module's business (`ipse.agents._agent`); this
module runs the steps every install shares. Install first checks that what it registers can run
(`ipse.agents._extras`: the stdio server needs nothing beyond ipse itself, ``proxy`` needs the
proxy extra); asks the agent CLI's module for its config edits; then adds the section between
``<!-- ipse:mcp:begin -->`` markers in the instructions file: behind the proxy, the narration
section (`ipse.handoff.narration_prompt`: tool calls and results are removed at checkpoints);
without it, that a checkpoint keeps notes and removes nothing. The begin marker records what
install created (files, folders, containers) and the proxy's port, so uninstall removes exactly
what install added: a file edited by nothing else comes back byte for byte. Every edit keeps the
file's formatting, line endings, byte order mark and mode; a file install creates gets the mode
the agent CLI gives it. A setting ipse would have to overwrite is refused before anything is
written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ipse.agents._agent import AgentCLI, Paths, Request
from ipse.agents._blocks import add_block, find_block, remove_block
from ipse.agents._commands import DEFAULT_PORT
from ipse.agents._extras import require
from ipse.agents._files import Change, Edit, read, remove_dir_if_empty, write
from ipse.agents._table import AGENTS, agent_named, every_agent
from ipse.errors import UsageError

BLOCK = "mcp"

NOTES_ONLY = """## Checkpoints (ipse)

This agent talks to its model directly, not through the ipse proxy: a checkpoint keeps your
notes, and nothing is removed from this conversation.

- At a natural checkpoint (a subtask done, a decision made), call `micro_handoff` with the facts:
  done, open, what went wrong and which approaches were rejected and why, working directory and
  repository, recipes worth keeping verbatim, and claims with their evidence. ipse stores them
  outside this conversation.
- After a context reset, or in a new session, call `recall` with the checkpoint id it returned
  to read them back.
"""


def paths(agent: str, root: Path, user: bool) -> Paths:
    """Where ``agent`` keeps its MCP servers, instructions and settings."""
    return agent_named(agent).paths(root, user)


def server_entry(agent: str) -> dict[str, object]:
    """The MCP server entry ``agent``'s config gets."""
    return agent_named(agent).server_entry()


def _request(
    root: Path,
    user: bool,
    proxy: bool,
    port: int,
    upstreams: Mapping[str, str] | None,
    record: str | None,
    statusline: bool = False,
) -> Request:
    return Request(root, user, proxy, port, dict(upstreams or {}), record, statusline)


def _section(proxied: bool) -> str:
    from ipse.handoff._shared import narration_prompt

    return (narration_prompt() if proxied else NOTES_ONLY).rstrip("\n") + "\n"


def install_agent(
    agent: str,
    root: Path,
    *,
    user: bool = False,
    proxy: bool = False,
    port: int = DEFAULT_PORT,
    upstreams: Mapping[str, str] | None = None,
    record: str | None = None,
    statusline: bool = False,
) -> list[Change]:
    """Register ipse's MCP server with ``agent`` (and the proxy with ``proxy``, on ``port``,
    forwarding to ``upstreams`` and recording into ``record`` when given; and ``ipse usage
    statusline`` as its status line with ``statusline``); idempotent."""
    cli = agent_named(agent)
    if proxy and not cli.proxy:
        raise UsageError(f"--proxy: {cli.label} is not served by the ipse proxy")
    if statusline and not cli.statusline:
        raise UsageError(f"--statusline: {cli.label} runs no status line command")
    if proxy:  # (the stdio server it registers needs nothing beyond ipse itself)
        require("proxy", "--proxy (ipse proxy start)")
    where = cli.paths(root, user)
    attrs: dict[str, str] = {}
    request = _request(root, user, proxy, port, upstreams, record, statusline)
    installed = cli.install(where, request, attrs)
    current: dict[str, str] = {}
    if installed.port is not None:
        attrs["proxy"] = "1"
        current["port"] = str(installed.port)
    old_doc = read(where.instructions)
    if old_doc is None and not where.instructions.parent.exists():
        attrs["docs_dir"] = "new"
    new_doc = add_block(old_doc, _section(installed.port is not None), BLOCK, attrs, current)
    edits = [*installed.edits, Edit(where.instructions, old_doc, new_doc)]
    return [write(e, e.path.name in cli.private) for e in edits]


def install_notes(
    agent: str,
    root: Path,
    *,
    user: bool = False,
    proxy: bool = False,
    port: int = DEFAULT_PORT,
    upstreams: Mapping[str, str] | None = None,
    record: str | None = None,
    statusline: bool = False,
) -> list[str]:
    """What the user must know or do after this install, one line each: about what the agent
    CLI's files configure now (an earlier ``--proxy`` that stays included)."""
    cli = agent_named(agent)
    request = _request(root, user, proxy, port, upstreams, record, statusline)
    return cli.notes(request, cli.proxy_port(cli.paths(root, user)))


def uninstall_agent(agent: str, root: Path, *, user: bool = False) -> list[Change]:
    """Remove what `install_agent` added for ``agent`` (with or without the proxy): exactly
    what the markers record, and ipse's entries found by content where the markers are gone."""
    cli = agent_named(agent)
    where = cli.paths(root, user)
    old_doc = read(where.instructions)
    found = find_block(old_doc, BLOCK) if old_doc is not None else None
    attrs = found[2] if found else {}
    edits = cli.uninstall(where, attrs, found is not None)
    if old_doc is not None and found is not None:
        edits.append(Edit(where.instructions, old_doc, remove_block(old_doc, BLOCK)[0]))
    changes = [write(e) for e in edits if e.new != e.old]
    for folder, name in cli.folders(where):
        remove_dir_if_empty(folder, attrs.get(name) == "new")
    return changes


def proxy_port(agent: str, root: Path, *, user: bool = False) -> int | None:
    """The port of the ipse proxy ``agent``'s files route through now (None: they do not)."""
    cli = agent_named(agent)
    return cli.proxy_port(cli.paths(root, user))


def routed_ports(root: Path) -> dict[int, list[str]]:
    """Every proxy port an install ipse can see still routes through, with what routes there
    (each agent CLI's files for ``root`` and the user's own)."""
    found: dict[int, list[str]] = {}
    seen: set[Path] = set()
    for cli in every_agent():
        for user in (False, True):
            where = cli.paths(root, user)
            routing = (where.settings or where.config).absolute()
            port = cli.proxy_port(where)
            if port is None or routing in seen:  # (Codex's one config serves both scopes)
                continue
            seen.add(routing)
            mine = routing.is_relative_to(root.absolute())
            scope = "the project's" if mine else "the user's"
            found.setdefault(port, []).append(f"{cli.label} ({scope} {routing.name})")
    return found


def compaction_point(
    agent: str, root: Path, window: int, *, user: bool = False, max_output: int = 128_000
) -> int | None:
    """The context size in tokens at which ``agent`` compacts its own conversation, for a model
    of ``window`` tokens (and ``max_output``), with the compaction settings its files (and, for
    Claude Code, the environment) hold now; None where its default is not known."""
    cli = agent_named(agent)
    values = cli.compaction_values(cli.paths(root, user))
    return cli.compaction.threshold(window, values, max_output)


def compaction_rule(session_format: str) -> Callable[[int, int], int | None] | None:
    """Where the agent CLI that writes ``session_format`` sessions compacts, with its settings
    at their defaults, as a function of a model's window and output (None: no agent CLI
    writes that format): what a replay of a past session holds its requests to."""
    for cli in agents_with_sessions():
        if cli.session_format == session_format:
            rule = cli.compaction.threshold
            return lambda window, output: rule(window, {}, output)
    return None


def instructions_file(agent: str) -> str:
    """The name of ``agent``'s instructions file (CLAUDE.md, AGENTS.md, GEMINI.md)."""
    return agent_named(agent).instructions


def hooks_file(agent: str, root: Path) -> Path | None:
    """Where ``ipse state install`` puts ``agent``'s session-start hooks (None: none)."""
    return agent_named(agent).hooks_file(root)


def session_folder(agent: str, cwd: Path) -> Path | None:
    """The folder where ``agent`` writes the sessions run in ``cwd`` (None: not known yet)."""
    return agent_named(agent).session_folder(cwd)


def agents_with_sessions() -> list[AgentCLI]:
    """The agent CLIs whose session files ipse reads, in table order."""
    return [cli for cli in every_agent() if cli.session_format is not None]


__all__ = [
    "AGENTS",
    "BLOCK",
    "NOTES_ONLY",
    "agents_with_sessions",
    "compaction_point",
    "compaction_rule",
    "hooks_file",
    "install_agent",
    "install_notes",
    "instructions_file",
    "paths",
    "proxy_port",
    "routed_ports",
    "server_entry",
    "session_folder",
    "uninstall_agent",
]
