"""The micro-handoff: strip tool traffic and thinking at a checkpoint, keep every authored word.

`strip` rewrites the part before a cut (pure, deterministic, idempotent); `validate` holds the
provider's rules every output is checked against; `verify` proves nothing authored was lost;
`wire` hands off a request on the wire (the proxy's and the SDK hooks' call); `notes` defines the
checkpoint tool and renders its notes; `checkpoint` stores them in the archive by session;
`narration` measures whether the agent narrated enough for the handoff to keep what it knew;
`policy` says when a handoff pays off, and `autopilot` when a proxy nudges the agent to
checkpoint or cuts on its own (`autopilot_step` at one request, `plan_autopilot` over a whole
conversation, the same for every replica and replay); `recognise` knows a checkpoint call in
every shape a harness delivers it; `session` is the one key a conversation's checkpoints and
handoffs share.
Every handoff marks its cut (`marker`) with what it removed and a `Ledger` of it (`ledger`,
read with `effects`: what each removed call did); `budget` holds a handoff to a token count by
moving the oldest agent narration to the archive.
"""

from __future__ import annotations

import typing as _typing

from ipse import _lazy
from ipse.errors import CutError
from ipse.handoff._autopilot import (
    AutopilotPolicy,
    AutopilotStep,
    Limits,
    RequestState,
    Thresholds,
    autopilot_step,
)
from ipse.handoff._autopilot_plan import (
    NUDGE,
    AutopilotPlan,
    PlannedEvent,
    limits_for,
    plan_autopilot,
)
from ipse.handoff._cut import CHECKPOINT_TOOL
from ipse.handoff._ledger import DEFAULT_LEDGER_TOKENS, Ledger
from ipse.handoff._measure import tokens_saved
from ipse.handoff._narration import Narration, narration, narration_prompt
from ipse.handoff._notes import DESCRIPTION, SCHEMA, check_notes, render_notes, tool_definition
from ipse.handoff._policy import RATES, CacheRates, Decision, break_even, decide
from ipse.handoff._recognise import is_checkpoint, is_checkpoint_call
from ipse.handoff._report import HandoffReport, Removed
from ipse.handoff._run import Handoff, HandoffOptions, run
from ipse.handoff._session import handoff_session
from ipse.handoff._strip import StripOptions, strip
from ipse.handoff._validate import Problem, ProblemCode, validate
from ipse.handoff._verify import Lost, Verdict, verify

if _typing.TYPE_CHECKING:
    from ipse.handoff._checkpoint import Checkpoint, Drop, checkpoint_items, record_checkpoint

# Imported on first use: a handoff (``ipse handoff``, the proxy) records no checkpoint.
_MODULES = {"_checkpoint": ("Checkpoint", "Drop", "checkpoint_items", "record_checkpoint")}
__getattr__, __dir__ = _lazy.exports("ipse.handoff", _MODULES, globals())

__all__ = [
    "CHECKPOINT_TOOL",
    "DEFAULT_LEDGER_TOKENS",
    "DESCRIPTION",
    "NUDGE",
    "RATES",
    "SCHEMA",
    "AutopilotPlan",
    "AutopilotPolicy",
    "AutopilotStep",
    "CacheRates",
    "Checkpoint",
    "CutError",
    "Decision",
    "Drop",
    "Handoff",
    "HandoffOptions",
    "HandoffReport",
    "Ledger",
    "Limits",
    "Lost",
    "Narration",
    "PlannedEvent",
    "Problem",
    "ProblemCode",
    "Removed",
    "RequestState",
    "StripOptions",
    "Thresholds",
    "Verdict",
    "autopilot_step",
    "break_even",
    "check_notes",
    "checkpoint_items",
    "decide",
    "handoff_session",
    "is_checkpoint",
    "is_checkpoint_call",
    "limits_for",
    "narration",
    "narration_prompt",
    "plan_autopilot",
    "record_checkpoint",
    "render_notes",
    "run",
    "strip",
    "tokens_saved",
    "tool_definition",
    "validate",
    "verify",
]
