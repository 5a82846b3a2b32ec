"""Agent harnesses: registering ipse with Claude Code, Codex and Gemini CLI, and finding their
session files.

`install` / `uninstall` edit each harness's own files (MCP server entries, hooks, proxy
settings, the instructions file's marked block) so that uninstall leaves every file byte for
byte as it was; the JSON and TOML edits preserve formatting.
"""

from __future__ import annotations

from ipse.harness._sessions import (
    claude_code_session_file,
    claude_config_dir,
    claude_project_folder,
)

__all__ = ["claude_code_session_file", "claude_config_dir", "claude_project_folder"]
