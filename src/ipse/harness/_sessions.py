"""Where an agent harness keeps a session's transcript: Claude Code's project folders.

Claude Code writes ``<config>/projects/<folder>/<session id>.jsonl``, where ``<config>`` is
``CLAUDE_CONFIG_DIR`` or ``~/.claude`` and ``<folder>`` is the working directory with every
character that is not a letter or digit replaced by ``-`` (measured with Claude Code 2.1.328;
longer than 200 characters, a hash suffix follows, which is matched by prefix here).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SAFE_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def claude_config_dir() -> Path:
    """Claude Code's configuration folder: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def claude_project_folder(cwd: Path) -> str:
    """The folder name Claude Code gives a working directory."""
    return re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


def claude_code_session_file(session: str, cwd: Path | None = None) -> Path | None:
    """The session's transcript, when it exists; None otherwise (or for an unsafe id)."""
    if not _SAFE_SESSION.fullmatch(session) or ".." in session:
        return None
    projects = claude_config_dir() / "projects"
    name = claude_project_folder((cwd or Path.cwd()).resolve())
    candidates = [projects / name]
    if len(name) > 200 and projects.is_dir():
        candidates += sorted(p for p in projects.iterdir() if p.name.startswith(name[:200]))
    for folder in candidates:
        path = folder / f"{session}.jsonl"
        if path.is_file():
            return path
    return None


__all__ = ["claude_code_session_file", "claude_config_dir", "claude_project_folder"]
