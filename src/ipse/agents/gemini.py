"""Gemini CLI: its settings, its MCP entry, its folder trust, its sessions, its compaction.

- MCP server: ``mcpServers.ipse`` in the project's ``.gemini/settings.json`` (user: in
  ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``), edited as the JSON with comments Gemini CLI
  reads. The entry says ``"trust": true``: Gemini CLI then calls ipse's tools without asking
  first. A headless run (``gemini -p``) cannot ask, so without it Gemini CLI leaves every tool
  that would ask out of the request, ipse's among them (``python bench/first_request.py --runs 10
  --agents gemini``: 10 of 10 first requests offered them with it, 0 of 10 without;
  ``tests/journey/test_gemini_journey.py`` runs it). ipse's tools read and write only
  ipse's own store and state folder. Gemini CLI has no key that makes it wait for a server: a
  ``-p`` run always waits for every server before its first request, an interactive one never
  does.
- Gemini CLI runs MCP servers, user-level ones too, only in folders the user trusts
  (``trustedFolders.json``): the notes say so when the folder is not trusted yet.
- Instructions: ``GEMINI.md``. No ipse proxy serves Gemini's API: a checkpoint keeps notes.
- Sessions: ``<gemini dir>/tmp/<project name>/chats/session-*.jsonl``, the name from
  ``projects.json`` (Gemini CLI 0.61.0).
- Compaction: ``model.compressionThreshold`` (see `COMPACTION`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipse.agents._agent import AgentCLI, Compaction, Installed, Paths, Request
from ipse.agents._commands import home_env, server_argv
from ipse.agents._files import Edit, parsed, read
from ipse.agents._mcpjson import add_entry, remove_entry


def gemini_dir() -> Path:
    """Gemini CLI's user folder: ``.gemini`` in ``GEMINI_CLI_HOME``, else in the home folder."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


def trusts(root: Path) -> bool:
    """Whether Gemini CLI's trusted folders trust ``root``, by its rule: the longest rule whose
    folder (a TRUST_PARENT rule's parent) holds ``root`` decides."""
    env = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    path = Path(env) if env else gemini_dir() / "trustedFolders.json"
    rules = parsed(read(path) if path.is_file() else None, comments=True)
    if not isinstance(rules, dict):
        return False
    folder = root.resolve()
    decided, length = None, -1
    for name, level in rules.items():
        where = Path(name).expanduser().resolve()
        where = where.parent if level == "TRUST_PARENT" else where
        if (folder == where or where in folder.parents) and len(name) > length:
            decided, length = level, len(name)
    return decided in ("TRUST_FOLDER", "TRUST_PARENT")


def compaction_threshold(window: int, values: Mapping[str, str], max_output: int = 0) -> int | None:
    """``model.compressionThreshold`` (a fraction, 0.5 unless set) of the model's window."""
    try:
        fraction = float(values.get("model.compressionThreshold", "0.5"))
    except ValueError:
        fraction = 0.5
    return int(fraction * window) if 0 < fraction <= 1 else int(0.5 * window)


COMPACTION = Compaction(
    settings=("model.compressionThreshold",),
    rule=(
        "compresses the history when the last request's prompt tokens reach "
        "model.compressionThreshold (settings.json, a fraction, default 0.5) of the model's "
        "token limit; a remote experiment flag may set it when the setting is absent"
    ),
    verified="read from Gemini CLI 0.61.0's bundle (its settings schema and compression service)",
    threshold=compaction_threshold,
)


_TRUST_NOTE = (
    "the entry says trust: Gemini CLI calls ipse's tools (notes, recall, the state folder: "
    "nothing outside ipse's own store and state) without asking, which `gemini -p` needs, as "
    "it cannot ask"
)


class Gemini(AgentCLI):
    name = "gemini"
    label = "Gemini CLI"
    instructions = "GEMINI.md"
    session_format = "gemini-cli"
    session_globs = ("*/chats/session-*.jsonl", "*/chats/session-*.json")
    comments = True
    compaction = COMPACTION

    def paths(self, root: Path, user: bool) -> Paths:
        folder = gemini_dir() if user else root / ".gemini"
        return Paths(folder / "settings.json", (folder if user else root) / "GEMINI.md", None)

    def server_entry(self) -> dict[str, Any]:
        command, args = server_argv()
        entry: dict[str, Any] = {"command": command, "args": args}
        env = home_env()
        if env:
            entry["env"] = env
        entry["trust"] = True  # gemini -p offers only tools that need no confirmation
        return entry

    def install(self, where: Paths, request: Request, attrs: dict[str, str]) -> Installed:
        return Installed([add_entry(where.config, self.server_entry(), attrs, self.comments)], None)

    def uninstall(self, where: Paths, attrs: dict[str, str], marked: bool) -> list[Edit]:
        return [remove_entry(where.config, attrs, marked, self.comments)]

    def notes(self, request: Request, port: int | None) -> list[str]:
        notes = [
            "no ipse proxy serves Gemini's API: a checkpoint keeps notes for recall, it does "
            "not shrink the conversation",
            _TRUST_NOTE,
        ]
        if request.user:
            notes.append(
                "Gemini CLI runs MCP servers, user-level ones too, only in trusted folders: "
                "trust each project folder when gemini asks (or with /permissions)"
            )
        elif not trusts(request.root):
            notes.append(
                f"Gemini CLI runs MCP servers only in a trusted folder: trust "
                f"{request.root.resolve()} when gemini asks (or with /permissions)"
            )
        return notes

    def session_folder(self, cwd: Path) -> Path | None:
        projects = parsed(read(gemini_dir() / "projects.json"))
        names = projects.get("projects") if isinstance(projects, dict) else None
        name = names.get(str(cwd.resolve())) if isinstance(names, dict) else None
        return gemini_dir() / "tmp" / name / "chats" if isinstance(name, str) and name else None

    def sessions_root(self) -> Path | None:
        return gemini_dir() / "tmp"

    def compaction_values(self, where: Paths) -> dict[str, str]:
        settings = parsed(read(where.config), comments=self.comments)
        model = settings.get("model") if isinstance(settings, dict) else None
        value = model.get("compressionThreshold") if isinstance(model, dict) else None
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return {"model.compressionThreshold": str(value)} if ok else {}


AGENT = Gemini()

# What the table (`ipse.agents._table`) reads; the rest serves it and its tests.
__all__ = ["AGENT"]
