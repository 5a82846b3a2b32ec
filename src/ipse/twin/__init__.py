"""Identity snapshots for twins: versioned state, transitions, one writer, rehydration.

A twin's identity state (who it talks to, established facts, commitments, open loops) lives
outside the context window, is written only when its identity hash changes, by one lease
holder at a time, and is rehydrated into a fresh window in a fixed, deterministic order.
"""

from __future__ import annotations

from ipse.twin._config import TwinConfig, parse_config
from ipse.twin._decay import decay
from ipse.twin._rehydrate import Rehydration, rehydrate
from ipse.twin._state import TwinState
from ipse.twin._store import open_store
from ipse.twin._tools import anthropic_tools, openai_tools
from ipse.twin._transitions import establish_fact
from ipse.twin._turn import apply_turn

__all__ = [
    "Rehydration",
    "TwinConfig",
    "TwinState",
    "anthropic_tools",
    "apply_turn",
    "decay",
    "establish_fact",
    "open_store",
    "openai_tools",
    "parse_config",
    "rehydrate",
]
