"""Agent harnesses: registering ipse with Claude Code, Codex and Gemini CLI, and finding their
session files.

`install_agent` / `uninstall_agent` edit each harness's own files (MCP server entries, hooks, proxy
settings, the instructions file's marked block) so that uninstall leaves every file byte for
byte as it was; the JSON (`jsonedit`) and TOML (`tomledit`) edits preserve formatting, and
`ipse state install` uses the same edits, blocks and launcher.
"""

from __future__ import annotations

from ipse.harness._blocks import add_block, find_block, remove_block
from ipse.harness._install import (
    AGENTS,
    PROXY_URL,
    Change,
    Paths,
    codex_home,
    install_agent,
    launcher,
    paths,
    program,
    proxy_hook,
    server_entry,
    uninstall_agent,
)
from ipse.harness._sessions import (
    claude_code_session_file,
    claude_config_dir,
)

__all__ = [
    "AGENTS",
    "PROXY_URL",
    "Change",
    "Paths",
    "add_block",
    "claude_code_session_file",
    "claude_config_dir",
    "codex_home",
    "find_block",
    "install_agent",
    "launcher",
    "paths",
    "program",
    "proxy_hook",
    "remove_block",
    "server_entry",
    "uninstall_agent",
]
