"""Agent harnesses: registering ipse with Claude Code, Codex and Gemini CLI, and finding their
session files.

`install_agent` / `uninstall_agent` edit each harness's own files (MCP server entries, hooks, proxy
settings, the instructions file's marked block) so that uninstall leaves every file byte for
byte as it was; the JSON (`jsonedit`) and TOML (`tomledit`) edits preserve formatting, and
`ipse state install` uses the same edits, blocks and launcher. Install first checks that what it
registers can run (`require`: the extras ``ipse mcp`` and the proxy import).
"""

from __future__ import annotations

from ipse.harness._blocks import add_block, find_block, remove_block
from ipse.harness._extras import NotRunnable, install_command, require
from ipse.harness._install import (
    AGENTS,
    DEFAULT_PORT,
    NOTES_ONLY,
    PROXY_URL,
    Change,
    Paths,
    claude_user_config,
    codex_home,
    gemini_dir,
    hook_program,
    install_agent,
    install_notes,
    launcher,
    paths,
    program,
    prompt_hook,
    proxy_hook,
    proxy_url,
    server_entry,
    uninstall_agent,
)
from ipse.harness._sessions import (
    claude_code_session_file,
    claude_config_dir,
    codex_session_file,
)

__all__ = [
    "AGENTS",
    "DEFAULT_PORT",
    "NOTES_ONLY",
    "PROXY_URL",
    "Change",
    "NotRunnable",
    "Paths",
    "add_block",
    "claude_code_session_file",
    "claude_config_dir",
    "claude_user_config",
    "codex_home",
    "codex_session_file",
    "find_block",
    "gemini_dir",
    "hook_program",
    "install_agent",
    "install_command",
    "install_notes",
    "launcher",
    "paths",
    "program",
    "prompt_hook",
    "proxy_hook",
    "proxy_url",
    "remove_block",
    "require",
    "server_entry",
    "uninstall_agent",
]
