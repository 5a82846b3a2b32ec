"""Where an agent harness keeps a session's transcript: Claude Code's project folders, Codex's
rollouts.

Claude Code writes ``<config>/projects/<folder>/<session id>.jsonl`` (``<config>`` is
``CLAUDE_CONFIG_DIR`` or ``~/.claude``; ``<folder>`` is the working directory with every
character that is not a letter or digit replaced by ``-``, see
`ipse.transcript._formats.claude_code_session`); Codex writes
``<CODEX_HOME or ~/.codex>/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``. The MCP server
uses them to measure what a
checkpoint's handoff will drop, for the session that started it.
"""

from __future__ import annotations

import re
from pathlib import Path

_SAFE_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def claude_config_dir() -> Path:
    """Claude Code's configuration folder: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    from ipse.transcript._formats.claude_code_session import config_root

    return config_root()


def claude_code_session_file(session: str, cwd: Path | None = None) -> Path | None:
    """The session's transcript file, when it exists; None otherwise (or for an id that is
    not a plain name)."""
    from ipse.transcript._formats.claude_code_session import project_folder

    if not _SAFE_SESSION.fullmatch(session):
        return None
    folder = claude_config_dir() / "projects" / project_folder(str((cwd or Path.cwd()).resolve()))
    path = folder / f"{session}.jsonl"
    return path if path.is_file() else None


def codex_session_file(session: str) -> Path | None:
    """The rollout of Codex's thread ``session``, when it exists (the newest, should a thread
    have several); None otherwise (or for an id that is not a plain name)."""
    import os

    if not _SAFE_SESSION.fullmatch(session):
        return None
    env = os.environ.get("CODEX_HOME")
    home = Path(env).expanduser() if env else Path.home() / ".codex"
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*-{session}.jsonl"))
    return found[-1] if found else None


__all__ = ["claude_code_session_file", "claude_config_dir", "codex_session_file"]
