"""Agent CLIs: registering ipse with Claude Code, Codex and Gemini CLI.

Each agent CLI is one module behind one interface (`AgentCLI`: its files, its MCP entry, its
instructions file, its hooks, its session folder, its compaction settings), registered in one
table (`ipse.agents._table`); everything here asks the table, never an agent CLI's name.

`install_agent` / `uninstall_agent` edit each agent CLI's own files (MCP server entries, hooks,
proxy settings, the instructions file's marked block) so that uninstall leaves every file byte
for byte as it was; the JSON (`jsonedit`) and TOML (`tomledit`) edits preserve formatting, and
``ipse state install`` uses the same edits, blocks and launcher. Install first checks that what it
registers can run (`require`: the proxy extra for ``--proxy``; the stdio server needs no extra).
`compaction_point` says where an agent CLI will compact its own conversation with the settings
its files hold.
"""

from __future__ import annotations

from ipse.agents._agent import AgentCLI, Paths
from ipse.agents._blocks import add_block, find_block, remove_block
from ipse.agents._commands import (
    PROXY_URL,
    hook_program,
    launcher,
    program,
    proxy_url,
)
from ipse.agents._extras import NotRunnable, install_command, require
from ipse.agents._files import Change
from ipse.agents._install import (
    NOTES_ONLY,
    agents_with_sessions,
    compaction_point,
    compaction_rule,
    hooks_file,
    install_agent,
    install_notes,
    instructions_file,
    paths,
    proxy_port,
    routed_ports,
    server_entry,
    session_folder,
    uninstall_agent,
)
from ipse.agents._table import AGENTS
from ipse.agents.claude_code import claude_user_config, prompt_hook, proxy_hook
from ipse.agents.codex import codex_home
from ipse.agents.gemini import gemini_dir

__all__ = [
    "AGENTS",
    "NOTES_ONLY",
    "PROXY_URL",
    "AgentCLI",
    "Change",
    "NotRunnable",
    "Paths",
    "add_block",
    "agents_with_sessions",
    "claude_user_config",
    "codex_home",
    "compaction_point",
    "compaction_rule",
    "find_block",
    "gemini_dir",
    "hook_program",
    "hooks_file",
    "install_agent",
    "install_command",
    "install_notes",
    "instructions_file",
    "launcher",
    "paths",
    "program",
    "prompt_hook",
    "proxy_hook",
    "proxy_port",
    "proxy_url",
    "remove_block",
    "require",
    "routed_ports",
    "server_entry",
    "session_folder",
    "uninstall_agent",
]
