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

from ipse.handoff._measure import tokens_saved
from ipse.handoff._notes import render_notes, tool_definition
from ipse.handoff._run import Handoff, HandoffOptions, run
from ipse.handoff._strip import strip
from ipse.handoff._validate import validate
from ipse.handoff._verify import Verdict, verify

__all__ = [
    "Handoff",
    "HandoffOptions",
    "Verdict",
    "render_notes",
    "run",
    "strip",
    "tokens_saved",
    "tool_definition",
    "validate",
    "verify",
]
