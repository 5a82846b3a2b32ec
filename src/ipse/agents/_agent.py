"""The one interface every agent CLI module implements, and what install passes it.

An agent CLI (Claude Code, Codex, Gemini CLI) is a program that runs a model in a loop with
tools; ipse registers its MCP server there, says in the agent CLI's instructions file what a
checkpoint does, and (where the ipse proxy serves the agent CLI's API) routes it through the
proxy. Each agent CLI is one module (``ipse.agents.claude_code``, ...) holding one `AgentCLI`
named ``AGENT``, registered by one line in `ipse.agents._table`; install, uninstall, the notes,
``ipse state install`` and the MCP server's session lookup ask it, never its name:

- where it keeps its files (`paths`: MCP servers, instructions, hooks and proxy settings) and
  which of them it keeps private (0600 when install creates them);
- its MCP entry (`server_entry`) and the edits that add and remove it, with the proxy settings
  where the proxy serves it (`install`, `uninstall`), and which proxy port its files route
  through now (`proxy_port`);
- its hooks (`hooks_file`: where ``ipse state install`` puts its session-start hooks, if any);
- its session folder (`session_folder`, `session_file`, `session_format`), and where every
  session of every project lies (`sessions_root`, `session_globs`: what ``ipse usage`` reads);
- its compaction settings (`compaction`: the settings that move the point where it compacts its
  own conversation, the rule, and what ipse verified of it);
- what install tells the user (`notes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipse.agents._commands import DEFAULT_PORT
from ipse.agents._files import Edit


@dataclass(frozen=True)
class Paths:
    """The files one agent CLI's install touches."""

    config: Path  # where its MCP servers are registered
    instructions: Path  # CLAUDE.md, AGENTS.md, GEMINI.md
    settings: Path | None  # a separate file for its hooks and proxy settings (Claude Code)


@dataclass(frozen=True)
class Request:
    """What one ``ipse install`` was asked for."""

    root: Path
    user: bool = False
    proxy: bool = False
    port: int = DEFAULT_PORT
    upstreams: Mapping[str, str] = field(default_factory=dict)
    record: str | None = None
    statusline: bool = False  # show ``ipse usage statusline`` under the prompt


@dataclass(frozen=True)
class Installed:
    """The edits one agent CLI's install makes (the instructions file aside) and the proxy port
    its files route through afterwards (None: not through the proxy; an earlier ``--proxy``
    stays when installed again without it)."""

    edits: list[Edit]
    port: int | None


@dataclass(frozen=True)
class Compaction:
    """Where an agent CLI compacts its own conversation (writes a compaction summary in place
    of the history), and the settings that move that point.

    ``threshold(window, values, max_output)`` is the context size in tokens at which it
    compacts, for a model with ``window`` tokens of context and ``max_output`` of output, given
    the ``values`` its settings hold (by the names in ``settings``); None where the agent CLI
    decides by something ipse cannot know (a default from its model catalog)."""

    settings: tuple[str, ...]
    rule: str
    verified: str
    threshold: Callable[[int, Mapping[str, str], int], int | None]


class AgentCLI:
    """One agent CLI's answers to install, uninstall, the notes and the session lookup.

    A subclass sets the class attributes and overrides what its agent CLI does differently;
    the defaults are those of an agent CLI with no proxy, no hooks and no session files."""

    name: str = ""  # what ``--agent`` calls it
    label: str = ""  # how people write its name
    instructions: str = ""  # its instructions file's name
    proxy: bool = False  # whether the ipse proxy serves its API
    statusline: bool = False  # whether it runs a status line command ipse can be
    private: frozenset[str] = frozenset()  # names of files it keeps 0600
    comments: bool = False  # whether it reads its JSON config as JSON with comments
    session_format: str | None = None  # the transcript format of its session files
    session_globs: tuple[str, ...] = ()  # its session files under `sessions_root`
    compaction: Compaction

    def paths(self, root: Path, user: bool) -> Paths:
        """Where it keeps its MCP servers, instructions and settings."""
        raise NotImplementedError

    def server_entry(self) -> dict[str, Any]:
        """The MCP server entry its config gets."""
        raise NotImplementedError

    def install(self, where: Paths, request: Request, attrs: dict[str, str]) -> Installed:
        """The config edits that register ipse (and route through the proxy, on request),
        recording in ``attrs`` what they create (the instructions block's marker keeps it)."""
        raise NotImplementedError

    def uninstall(self, where: Paths, attrs: dict[str, str], marked: bool) -> list[Edit]:
        """The edits that remove what any install added, by the marker's ``attrs`` (``marked``:
        a marker was found) or, where the markers are gone, by content."""
        raise NotImplementedError

    def proxy_port(self, where: Paths) -> int | None:
        """The port of the ipse proxy its files route through now, None when they do not."""
        return None

    def notes(self, request: Request, port: int | None) -> list[str]:
        """What the user must know after this install (``port``: the proxy its files route
        through now), one line each."""
        return []

    def folders(self, where: Paths) -> list[tuple[Path, str]]:
        """The folders install may have created, with the marker attribute that says so."""
        found = [(where.config.parent, "dir"), (where.instructions.parent, "docs_dir")]
        if where.settings is not None:
            found.append((where.settings.parent, "settings_dir"))
        return found

    def hooks_file(self, root: Path) -> Path | None:
        """The project file where ``ipse state install`` puts its session-start hooks (None:
        it has none ipse uses)."""
        return None

    def session_folder(self, cwd: Path) -> Path | None:
        """The folder where it writes the sessions run in ``cwd``."""
        return None

    def session_file(self, session: str, cwd: Path) -> Path | None:
        """The file of session ``session`` run in ``cwd``, when it exists."""
        return None

    def sessions_root(self) -> Path | None:
        """The folder under which it writes every session of every project, where its own
        environment variable puts it (`session_globs` name the files there); None when it
        writes none."""
        return None

    def compaction_values(self, where: Paths) -> dict[str, str]:
        """The values its compaction settings hold (by `Compaction.settings` names): from its
        files and, where it reads them there, the environment."""
        return {}


__all__ = ["AgentCLI", "Compaction", "Installed", "Paths", "Request"]
