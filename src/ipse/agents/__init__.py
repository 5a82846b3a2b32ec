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
from ipse.agents._install import install_agent, uninstall_agent
from ipse.agents._table import AGENTS

__all__ = ["AGENTS", "AgentCLI", "Paths", "install_agent", "uninstall_agent"]
