"""Agent harnesses: registering ipse with Claude Code, Codex and Gemini CLI (where a harness
keeps its session files is the readers' business: `ipse.transcript.claude_code_session_file`).

`install_agent` / `uninstall_agent` edit each harness's own files (MCP server entries, hooks, proxy
settings, the instructions file's marked block) so that uninstall leaves every file byte for
byte as it was; the JSON (`jsonedit`) and TOML (`tomledit`) edits preserve formatting, and
`ipse state install` uses the same edits, blocks and launcher. Install first checks that what it
registers can run (`require`: the proxy extra for ``--proxy``; the stdio server needs no extra).
"""

from __future__ import annotations

from ipse.harness._blocks import add_block, find_block, remove_block
from ipse.harness._extras import NotRunnable, install_command, require
from ipse.harness._install import (
    AGENTS,
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

__all__ = [
    "AGENTS",
    "NOTES_ONLY",
    "PROXY_URL",
    "Change",
    "NotRunnable",
    "Paths",
    "add_block",
    "claude_user_config",
    "codex_home",
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
