"""What `ipse.agents` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.agents.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.agents import _jsonedit as jsonedit
from ipse.agents._blocks import add_block, find_block, remove_block
from ipse.agents._commands import hook_program, program, proxy_url
from ipse.agents._files import Change
from ipse.agents._install import (
    agents_with_sessions,
    compaction_point,
    compaction_rule,
    hooks_file,
    install_notes,
    instructions_file,
    proxy_port,
    routed_ports,
)
from ipse.agents._table import agent_sending

__all__ = [
    "Change",
    "add_block",
    "agent_sending",
    "agents_with_sessions",
    "compaction_point",
    "compaction_rule",
    "find_block",
    "hook_program",
    "hooks_file",
    "install_notes",
    "instructions_file",
    "jsonedit",
    "program",
    "proxy_port",
    "proxy_url",
    "remove_block",
    "routed_ports",
]
