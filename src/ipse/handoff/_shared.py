"""What `ipse.handoff` shares with the rest of ipse: the names its sibling packages import
that are not its public API (``ipse.handoff.__all__``). Only ipse's own modules import
this one; the names live in the package's private modules."""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.handoff._autopilot import AutopilotPolicy, Limits, RequestState, autopilot_step
    from ipse.handoff._autopilot_parts import (
        autopilot_cut,
        could_act,
        item_starts,
        place_nudges,
    )
    from ipse.handoff._autopilot_plan import (
        NUDGE,
        AutopilotPlan,
        PlannedEvent,
        limits_for,
        plan_autopilot,
    )
    from ipse.handoff._checkpoint import checkpoint_items, record_checkpoint
    from ipse.handoff._cut import CHECKPOINT_TOOL
    from ipse.handoff._effects import command_of, exit_status, first_line, read_path, strings
    from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS
    from ipse.handoff._narration import narration_prompt
    from ipse.handoff._notes import DESCRIPTION, SCHEMA
    from ipse.handoff._policy import RATES, CacheRates, break_even
    from ipse.handoff._recognise import CHECKPOINT_TOOLS, is_checkpoint, is_checkpoint_call
    from ipse.handoff._rewrite import clear_cache, conversation_key
    from ipse.handoff._run import DEFAULT_MAX_TOKENS
    from ipse.handoff._session import handoff_session
    from ipse.handoff._strip import StripOptions

# Imported on first use, like the package's own names (`ipse._lazy`).
_MODULES = {
    "_autopilot": ("AutopilotPolicy", "Limits", "RequestState", "autopilot_step"),
    "_autopilot_plan": ("NUDGE", "AutopilotPlan", "PlannedEvent", "limits_for", "plan_autopilot"),
    "_autopilot_parts": ("autopilot_cut", "could_act", "item_starts", "place_nudges"),
    "_checkpoint": ("checkpoint_items", "record_checkpoint"),
    "_cut": ("CHECKPOINT_TOOL",),
    "_effects": ("command_of", "exit_status", "first_line", "read_path", "strings"),
    "_ledger": ("DEFAULT_LEDGER_TOKENS",),
    "_narration": ("narration_prompt",),
    "_notes": ("DESCRIPTION", "SCHEMA"),
    "_policy": ("RATES", "CacheRates", "break_even"),
    "_recognise": ("CHECKPOINT_TOOLS", "is_checkpoint", "is_checkpoint_call"),
    "_rewrite": ("clear_cache", "conversation_key"),
    "_run": ("DEFAULT_MAX_TOKENS",),
    "_session": ("handoff_session",),
    "_strip": ("StripOptions",),
}

__getattr__, __dir__ = _lazy.exports("ipse.handoff", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
