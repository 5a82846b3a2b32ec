"""What `ipse.twin` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.twin.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.twin._schema import dump_state, export_state
from ipse.twin._tools import TOOL_SPECS, tool_definitions, usage_lines

__all__ = ["TOOL_SPECS", "dump_state", "export_state", "tool_definitions", "usage_lines"]
