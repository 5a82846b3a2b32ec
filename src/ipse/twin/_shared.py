"""What `ipse.twin` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.twin.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

from ipse.twin._config import load_config
from ipse.twin._schema import dump_state, export_state
from ipse.twin._store import TwinStore
from ipse.twin._tools import TOOL_SPECS, tool_definitions, usage_lines
from ipse.twin._turn import init_twin

__all__ = [
    "TOOL_SPECS",
    "TwinStore",
    "dump_state",
    "export_state",
    "init_twin",
    "load_config",
    "tool_definitions",
    "usage_lines",
]
