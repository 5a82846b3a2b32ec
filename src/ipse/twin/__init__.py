"""Identity snapshots for twins: versioned state, transitions, one writer, rehydration.

A twin's identity state (who it talks to, established facts, commitments, open loops) lives
outside the context window, is written only when its identity hash changes, by one lease
holder at a time, and is rehydrated into a fresh window in a fixed, deterministic order.
"""

from __future__ import annotations

from ipse.errors import StaleWriter, WriterConflict
from ipse.store import Lease
from ipse.twin._apply import Applied, apply_transitions
from ipse.twin._config import TwinConfig, load_config, parse_config
from ipse.twin._decay import DecayPolicy, Eviction, decay
from ipse.twin._identity import IdentityPolicy, state_hash
from ipse.twin._rehydrate import Rehydration, rehydrate, render_context
from ipse.twin._schema import dump_state, export_state, load_snapshot
from ipse.twin._state import CURRENT_SCHEMA, Counterparty, Fact, Loop, TwinState
from ipse.twin._store import Snapshot, TwinStore, maybe_snapshot, open_store
from ipse.twin._tools import (
    TOOL_SPECS,
    Dispatched,
    anthropic_tools,
    dispatch,
    openai_tools,
    tool_definitions,
    usage_lines,
)
from ipse.twin._transitions import (
    apply_op,
    close_loop,
    establish_fact,
    make_commitment,
    open_loop,
    set_active_loop,
    set_counterparty,
    supersede_fact,
    use_fact,
)
from ipse.twin._turn import Turn, apply_turn, default_holder, init_twin

__all__ = [
    "CURRENT_SCHEMA",
    "TOOL_SPECS",
    "Applied",
    "Counterparty",
    "DecayPolicy",
    "Dispatched",
    "Eviction",
    "Fact",
    "IdentityPolicy",
    "Lease",
    "Loop",
    "Rehydration",
    "Snapshot",
    "StaleWriter",
    "Turn",
    "TwinConfig",
    "TwinState",
    "TwinStore",
    "WriterConflict",
    "anthropic_tools",
    "apply_op",
    "apply_transitions",
    "apply_turn",
    "close_loop",
    "decay",
    "default_holder",
    "dispatch",
    "dump_state",
    "establish_fact",
    "export_state",
    "init_twin",
    "load_config",
    "load_snapshot",
    "make_commitment",
    "maybe_snapshot",
    "open_loop",
    "open_store",
    "openai_tools",
    "parse_config",
    "rehydrate",
    "render_context",
    "set_active_loop",
    "set_counterparty",
    "state_hash",
    "supersede_fact",
    "tool_definitions",
    "usage_lines",
    "use_fact",
]
